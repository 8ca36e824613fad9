package edgeagent

import (
	"fmt"
	"strings"
	"testing"

	"github.com/temco/temco/internal/core/agent"
	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/drift"
)

// A drift finding is sent within the bounds the api takes: the fields past them are left
// out and their object says how many; an object left no field still says why it is there.
func TestDriftReportKeepsWithinTheAPIsBounds(t *testing.T) {
	fields := func(n int) []drift.Field {
		out := make([]drift.Field, n)
		for i := range out {
			out[i] = drift.Field{Path: fmt.Sprintf("data.k%03d", i), Live: `"x"`, Desired: `"v"`}
		}
		return out
	}
	rec := &appctx.ClusterDrift{InSync: 3}
	for i := range 7 {
		rec.Objects = append(rec.Objects, appctx.DriftObject{App: "web", Ref: appctx.Ref{Kind: "ConfigMap", Name: fmt.Sprint(i)}, Fields: fields(120)})
	}
	rec.Objects[0].Fields = append(rec.Objects[0].Fields[:1], drift.Field{Path: strings.Repeat("p", agent.MaxDriftPath+1)})
	rec.Objects = append(rec.Objects, appctx.DriftObject{App: "web", Ref: appctx.Ref{Kind: "Secret", Name: "s"}, Missing: true,
		Error: strings.Repeat("e", 2*agent.MaxDriftError)})
	d := driftReport(rec)
	if d.InSync != 3 || len(d.Objects) != 8 {
		t.Fatalf("report: inSync %d, %d objects", d.InSync, len(d.Objects))
	}
	total := 0
	for i, o := range d.Objects {
		total += len(o.Fields)
		if len(o.Fields) > agent.MaxDriftFields || len(o.Error) > agent.MaxDriftError {
			t.Errorf("objects[%d]: %d fields, an error of %d bytes", i, len(o.Fields), len(o.Error))
		}
		if !o.Missing && len(o.Fields) == 0 && o.Error == "" {
			t.Errorf("objects[%d] says nothing: the api refuses it", i)
		}
	}
	if total != agent.MaxDriftReportFields {
		t.Errorf("%d fields in all, want the bound %d", total, agent.MaxDriftReportFields)
	}
	if o := d.Objects[0]; len(o.Fields) != 1 || !strings.HasPrefix(o.Error, "1 more fields differ") {
		t.Errorf("an object with a path past the bound: %+v", o)
	}
	if o := d.Objects[1]; len(o.Fields) != agent.MaxDriftFields || !strings.HasPrefix(o.Error, "20 more fields differ") {
		t.Errorf("an object with more fields than the bound: %d fields, %q", len(o.Fields), o.Error)
	}
	if o := d.Objects[5]; len(o.Fields) != 99 || !strings.HasPrefix(o.Error, "21 more fields differ") {
		t.Errorf("an object reaching the report's bound: %d fields, %q", len(o.Fields), o.Error)
	}
	if o := d.Objects[6]; len(o.Fields) != 0 || !strings.HasPrefix(o.Error, "120 more fields differ") {
		t.Errorf("an object past the report's bound: %d fields, %q", len(o.Fields), o.Error)
	}
	if o := d.Objects[7]; !o.Missing || len(o.Error) != agent.MaxDriftError {
		t.Errorf("a missing object's error: %d bytes", len(o.Error))
	}
}
