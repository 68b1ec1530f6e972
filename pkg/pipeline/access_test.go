package pipeline_test

import (
	"testing"

	"github.com/persona-runtime/agent/pkg/pipeline"
)

// TestLayerRank: allowed is the most public layer, then trusted, then
// restricted, then dm; an unknown layer ranks as a DM when it is the
// conversation's and as allowed when it is the one compared with.
func TestLayerRank(t *testing.T) {
	order := []pipeline.Layer{pipeline.LayerAllowed, pipeline.LayerTrusted, pipeline.LayerRestricted, pipeline.LayerDM}
	for i, a := range order {
		for j, b := range order {
			if got, want := a.MorePrivateThan(b), i > j; got != want {
				t.Errorf("%s.MorePrivateThan(%s) = %v, want %v", a, b, got, want)
			}
		}
	}
	if !pipeline.Layer("").MorePrivateThan(pipeline.LayerRestricted) || pipeline.Layer("x").MorePrivateThan(pipeline.LayerDM) {
		t.Error("an unknown layer of the conversation should rank as a DM")
	}
	if !pipeline.LayerTrusted.MorePrivateThan("") || pipeline.LayerAllowed.MorePrivateThan("") {
		t.Error("an unknown layer compared with should rank as allowed")
	}
}

func TestMostPublicLayer(t *testing.T) {
	for _, tt := range []struct {
		allowed, trusted bool
		want             pipeline.Layer
	}{
		{true, true, pipeline.LayerAllowed},
		{true, false, pipeline.LayerAllowed},
		{false, true, pipeline.LayerTrusted},
		{false, false, pipeline.LayerRestricted},
	} {
		if got := pipeline.MostPublicLayer(tt.allowed, tt.trusted); got != tt.want {
			t.Errorf("MostPublicLayer(allowed %v, trusted %v) = %s, want %s", tt.allowed, tt.trusted, got, tt.want)
		}
	}
}

// TestAccessWalled: a DM always; a trusted channel only when allowed
// channels exist; a restricted channel when the persona has either list;
// the most public layer never.
func TestAccessWalled(t *testing.T) {
	for _, tt := range []struct {
		layer, mostPublic pipeline.Layer
		want              bool
	}{
		{pipeline.LayerDM, pipeline.LayerAllowed, true},
		{pipeline.LayerDM, pipeline.LayerTrusted, true},
		{pipeline.LayerDM, pipeline.LayerRestricted, true},
		{pipeline.LayerTrusted, pipeline.LayerAllowed, true},
		{pipeline.LayerTrusted, pipeline.LayerTrusted, false},
		{pipeline.LayerRestricted, pipeline.LayerAllowed, true},
		{pipeline.LayerRestricted, pipeline.LayerTrusted, true},
		{pipeline.LayerRestricted, pipeline.LayerRestricted, false},
		{pipeline.LayerAllowed, pipeline.LayerAllowed, false},
		{pipeline.LayerTrusted, "", true}, // unset: as if allowed channels existed
	} {
		a := pipeline.Access{Layer: tt.layer, MostPublic: tt.mostPublic}
		if got := a.Walled(); got != tt.want {
			t.Errorf("Access{Layer: %s, MostPublic: %s}.Walled() = %v, want %v", tt.layer, tt.mostPublic, got, tt.want)
		}
	}
}
