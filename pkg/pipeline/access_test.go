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

// TestAccessPredicates: the managers manage, are privileged and hold
// every scope; an approver is privileged and holds the scopes it lists,
// all of them with "anything"; a member holds nothing, whatever scopes
// its access states.
func TestAccessPredicates(t *testing.T) {
	for _, tt := range []struct {
		name                   string
		a                      pipeline.Access
		managing, privileged   bool
		mode, schedule, memory bool // HasScope of each
	}{
		{"manager", pipeline.Access{Role: pipeline.RoleManager}, true, true, true, true, true},
		{"backup manager", pipeline.Access{Role: pipeline.RoleBackup, Scopes: []string{"Bash"}}, true, true, true, true, true},
		{"approver of anything", pipeline.Access{Role: pipeline.RoleApprover, Scopes: []string{pipeline.ScopeAnything}}, false, true, true, true, true},
		{"approver of mode", pipeline.Access{Role: pipeline.RoleApprover, Scopes: []string{"Bash", "mode"}}, false, true, true, false, false},
		{"approver of nothing listed", pipeline.Access{Role: pipeline.RoleApprover}, false, true, false, false, false},
		{"approver, case differs", pipeline.Access{Role: pipeline.RoleApprover, Scopes: []string{"Mode", "Anything"}}, false, true, false, false, false},
		{"member with scopes", pipeline.Access{Role: pipeline.RoleMember, Scopes: []string{pipeline.ScopeAnything}}, false, false, false, false, false},
		{"no role", pipeline.Access{}, false, false, false, false, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a := tt.a
			if got := a.Managing(); got != tt.managing {
				t.Errorf("Managing() = %v, want %v", got, tt.managing)
			}
			if got := a.Privileged(); got != tt.privileged {
				t.Errorf("Privileged() = %v, want %v", got, tt.privileged)
			}
			for scope, want := range map[string]bool{"mode": tt.mode, "schedule": tt.schedule, "memory": tt.memory} {
				if got := a.HasScope(scope); got != want {
					t.Errorf("HasScope(%q) = %v, want %v", scope, got, want)
				}
			}
		})
	}
}
