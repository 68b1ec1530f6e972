package store

import "testing"

// A host a card allowed is the thread's alone, and allowing it twice is
// one record.
func TestEgressHosts(t *testing.T) {
	{
		s := openAt(t, testPath(t), newClock())
		ctx := t.Context()
		for i := 0; i < 2; i++ {
			if err := s.AllowEgressHost(ctx, "C1:1.0", "example.com:443", "a1"); err != nil {
				t.Fatal(err)
			}
		}
		for _, tc := range []struct {
			thread, host string
			want         bool
		}{{"C1:1.0", "example.com:443", true}, {"C1:2.0", "example.com:443", false}, {"C1:1.0", "example.com:80", false}} {
			got, err := s.EgressHostAllowed(ctx, tc.thread, tc.host)
			if err != nil || got != tc.want {
				t.Errorf("%s %s: %v %v, want %v", tc.thread, tc.host, got, err, tc.want)
			}
		}
		if err := s.AllowEgressHost(ctx, "", "x:443", "a"); err == nil {
			t.Error("empty thread accepted")
		}
	}
}
