package store

import (
	"context"
	"fmt"
)

// AllowEgressHost records that an approval card (approvalID) allowed the
// commands of threadKey to reach host (as the egress proxy compares it,
// `name:port`). Allowing it again keeps the first record.
func (s *Store) AllowEgressHost(ctx context.Context, threadKey, host, approvalID string) error {
	if threadKey == "" || host == "" {
		return fmt.Errorf("allow egress host: empty thread %q or host %q", threadKey, host)
	}
	err := s.write(ctx, func(ctx context.Context) error {
		_, err := s.exec(ctx, `INSERT INTO egress_hosts (thread_key, host, approval_id, at) VALUES (?, ?, ?, ?)
			ON CONFLICT (thread_key, host) DO NOTHING`, threadKey, host, approvalID, s.now().UnixMilli())
		return err
	})
	if err != nil {
		return fmt.Errorf("allow egress host %q in %q: %w", host, threadKey, err)
	}
	return nil
}

// EgressHostAllowed reports whether a card allowed host in threadKey.
func (s *Store) EgressHostAllowed(ctx context.Context, threadKey, host string) (bool, error) {
	var n int
	err := s.queryRow(ctx, `SELECT count(*) FROM egress_hosts WHERE thread_key = ? AND host = ?`, threadKey, host).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("egress host %q in %q: %w", host, threadKey, err)
	}
	return n > 0, nil
}
