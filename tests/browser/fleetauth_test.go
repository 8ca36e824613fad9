package browser

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/temco/temco/internal/adapters/auth/authtest"
)

// With authentication on, the actions carry the caller's token and its rights: a tenant
// reads its DIG's readiness, pauses and resumes its rollout (the DIG's page) and approves
// its stage from its row, sees the API's
// refusals (another project's fleet: 403; a live read beyond its budget: 429) in the
// page's message; an admin operates the other project's DIG from the same home.
func TestAuthenticatedFleetActions(t *testing.T) {
	iss, err := authtest.New(authIssuer, authAudience)
	if err != nil {
		t.Fatal(err)
	}
	a := startAuthAPI(t, iss, "TEMCO_LIVE_READS_PER_MINUTE=1")
	mine, other := gated(t, "br-authfleet-mine"), gated(t, "br-authfleet-other")
	tenantTok := iss.Token("fleet-tenant", []string{"project:" + mine.project}, nil)
	adminTok := iss.Token("fleet-admin", []string{"admin"}, nil)
	forbidden := a.message(t, tenantTok, "GET", "/fleet?project="+other.project, 403)

	p := newPage(t)
	p.extra = func() string {
		return mine.restView() + other.restView() + "--- temco api (authentication on), its log's end\n" + tail(a.proc.Log, 3000)
	}
	p.openAt(a.base + "/dashboard/#/")
	p.submitToken(tenantTok)
	p.waitGone(`form#token-form`, 30*time.Second)
	rowMine, rowOther := fleetRow(mine), fleetRow(other)
	approve := ` td[data-testid=fleet-rollout][data-waiting="approval"] button[data-action=approve-stage]`
	p.waitVisible(rowMine+approve, 2*time.Minute)
	if rows := p.fleetRows(); !slices.Equal(rows, []string{mine.project + "/ca/v1/dig"}) {
		p.fatalf("the tenant's fleet lists %v", rows)
	}

	// Its readiness: read once (nothing applied before the gate: not ready), then refused.
	read := rowMine + ` td[data-testid=fleet-ready] button[data-action=read-readiness]`
	p.click(read)
	p.waitVisible(rowMine+` td[data-testid=fleet-ready][data-total="1"][data-ready="0"]`, 2*time.Minute)
	p.click(read)
	p.waitUntil("the API's 429 in the message", 30*time.Second, func() (bool, string, error) {
		m := p.text(message)
		return strings.Contains(m, `too many live reads of clusters from "fleet-tenant"`), m, nil
	})
	p.shot("fleet-tenant-refused-read")

	// Its rollout, paused and resumed from its DIG's page, each confirmed, with its token.
	p.goTo(mine.digRoute())
	p.pauseAndResume(mine)
	p.goTo("#/")

	// Its stage, approved from its row, with its token.
	p.click(rowMine + approve)
	p.waitVisible(dialogOn, 30*time.Second)
	p.click("#confirm-yes")
	p.waitText(message, "Stage gate of dig approved.", 30*time.Second)
	mine.eventually("the tenant's rollout past its gate", 2*time.Minute, func() error {
		if _, raw := mine.dashboard(); strings.Contains(raw, `"WaitingForApproval"`) {
			return fmt.Errorf("still waiting: %s", raw)
		}
		return nil
	})
	// Applied on its cluster, as the stored status and the home (its batch's counts) say:
	// the read before the approval counted the batch Pending, the apply counts it again.
	mine.eventually("the tenant's DIG applied", 2*time.Minute, func() error {
		if s := mine.status(); s.Status != "Instantiated" || s.RsyncStatus["Applied"] != 3 {
			return fmt.Errorf("status %s, rsync %v", s.Status, s.RsyncStatus)
		}
		if f := fleetStates(t, mine.project); f["Applied"] != 1 || len(f) != 1 {
			return fmt.Errorf("the fleet's clusters by state: %v", f)
		}
		return nil
	})
	if _, raw := other.dashboard(); !strings.Contains(raw, `"WaitingForApproval"`) {
		p.fatalf("the other project's stage no longer waits after the tenant's approval: %s", raw)
	}

	// Another project's fleet, by its address: the API's 403, no row.
	p.goTo("#/?project=" + other.project)
	p.waitText(message, forbidden, 30*time.Second)
	if rows := p.fleetRows(); slices.Contains(rows, other.project+"/ca/v1/dig") {
		p.fatalf("the tenant's page lists the other project's DIG: %v", rows)
	}

	// An admin: the other project's row with its approval, which goes through.
	p.click(`button#sign-out`)
	p.submitToken(adminTok)
	p.waitGone(`form#token-form`, 30*time.Second)
	p.goTo("#/?q=" + other.project)
	p.waitVisible(rowOther+approve, 2*time.Minute)
	p.click(rowOther + approve)
	p.waitVisible(dialogOn, 30*time.Second)
	p.click("#confirm-yes")
	p.waitText(message, "Stage gate of dig approved.", 30*time.Second)
	p.waitGone(rowOther+approve, 2*time.Minute)
}

// fleetStates is the fleet's clusters by state of project's DIG (the dev stack's api).
func fleetStates(t *testing.T, project string) map[string]int {
	var f struct {
		DIGs []struct {
			States map[string]int `json:"states"`
		} `json:"digs"`
	}
	if err := json.Unmarshal(must(t, 200, "GET", "/fleet?project="+project, nil), &f); err != nil || len(f.DIGs) != 1 {
		t.Fatalf("GET /v2/fleet?project=%s: %v, %d DIGs", project, err, len(f.DIGs))
	}
	return f.DIGs[0].States
}
