package rollout

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

func count(n int) *IntOrPercent   { return &IntOrPercent{Value: n} }
func percent(n int) *IntOrPercent { return &IntOrPercent{Value: n, Percent: true} }

// good is a strategy using every field.
func good() Spec {
	return Spec{Rollback: RollbackManual, Stages: []Stage{
		{Name: "canary", Clusters: []string{"cluster1"}, Before: []Task{{Type: TaskApproval}},
			ProgressDeadline: Duration(5 * time.Minute), MinSuccessTime: Duration(time.Minute)},
		{Name: "edge", ClusterLabels: []string{"edge"}, SortByLabel: "ring", MaxConcurrency: percent(25),
			MaxUnavailable: count(1), MaxFailures: percent(10), After: []Task{{Type: TaskWait, Duration: Duration(time.Hour)}},
			Window: &Window{Cron: "0 22 * * 1-5", Duration: Duration(6 * time.Hour), TimeZone: "Europe/Paris"}},
		{Name: "rest", MaxConcurrency: count(10)},
	}}
}

func TestValidateAcceptsAGoodSpec(t *testing.T) {
	for _, s := range []Spec{good(), {Stages: []Stage{{Name: "all"}}}} {
		if err := s.Validate(); err != nil {
			t.Errorf("%+v: %v", s, err)
		}
	}
}

func TestValidateNamesTheFieldAtFault(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*Spec)
		want   string
	}{
		{"no stages", func(s *Spec) { s.Stages = nil }, "spec.stages: a rollout strategy needs at least one stage"},
		{"too many stages", func(s *Spec) {
			s.Stages = nil
			for i := range MaxStages + 1 {
				s.Stages = append(s.Stages, Stage{Name: fmt.Sprintf("s%d", i)})
			}
		}, "spec.stages: 51 stages, at most 50"},
		{"rollback", func(s *Spec) { s.Rollback = "never" }, `spec.rollback: "never" is neither "auto" nor "manual"`},
		{"offline policy", func(s *Spec) { s.Offline = &Offline{Policy: "ignore"} }, `spec.offline.policy: "ignore" is none of "wait", "skip" and "fail"`},
		{"offline after", func(s *Spec) { s.Offline = &Offline{After: Duration(time.Second)} }, `spec.offline.after: 1s is shorter than 30s`},
		{"stage name", func(s *Spec) { s.Stages[1].Name = "Edge" }, `spec.stages[1]: name "Edge": a stage name is 1 to 63 lower-case letters, digits and '-'`},
		{"empty stage name", func(s *Spec) { s.Stages[0].Name = "" }, `spec.stages[0]: name "": a stage name`},
		{"duplicate stage", func(s *Spec) { s.Stages[2].Name = "canary" }, `spec.stages[2]: stage name "canary" is used twice`},
		{"maxConcurrency 0", func(s *Spec) { s.Stages[1].MaxConcurrency = count(0) }, "spec.stages[1]: maxConcurrency: 0 is below 1"},
		{"maxConcurrency 0%", func(s *Spec) { s.Stages[1].MaxConcurrency = percent(0) }, "spec.stages[1]: maxConcurrency: 0% is below 1"},
		{"maxConcurrency above 100%", func(s *Spec) { s.Stages[1].MaxConcurrency = percent(101) }, "spec.stages[1]: maxConcurrency: 101% is above 100%"},
		{"maxUnavailable negative", func(s *Spec) { s.Stages[0].MaxUnavailable = count(-1) }, "spec.stages[0]: maxUnavailable: -1 is below 0"},
		{"maxFailures above 100%", func(s *Spec) { s.Stages[2].MaxFailures = percent(150) }, "spec.stages[2]: maxFailures: 150% is above 100%"},
		{"negative progressDeadline", func(s *Spec) { s.Stages[0].ProgressDeadline = Duration(-time.Second) }, "spec.stages[0]: progressDeadline: -1s is negative"},
		{"negative minSuccessTime", func(s *Spec) { s.Stages[0].MinSuccessTime = Duration(-time.Minute) }, "spec.stages[0]: minSuccessTime: -1m0s is negative"},
		{"short progressDeadline", func(s *Spec) { s.Stages[0].ProgressDeadline = Duration(time.Millisecond) }, "spec.stages[0]: progressDeadline: 1ms is shorter than a second"},
		{"approval with a duration", func(s *Spec) { s.Stages[0].Before[0].Duration = Duration(time.Second) }, "spec.stages[0]: before[0]: an approval has no duration"},
		{"wait without a duration", func(s *Spec) { s.Stages[1].After[0].Duration = 0 }, "spec.stages[1]: after[0]: a wait needs a positive duration"},
		{"unknown task", func(s *Spec) { s.Stages[1].After = append(s.Stages[1].After, Task{Type: "pause"}) }, `spec.stages[1]: after[1]: type "pause" is neither "approval" nor "wait"`},
		{"missing task type", func(s *Spec) { s.Stages[0].Before[0].Type = "" }, `spec.stages[0]: before[0]: type "" is neither`},
		{"bad cron", func(s *Spec) { s.Stages[1].Window.Cron = "0 22 * *" }, `spec.stages[1]: window: cron "0 22 * *": expected exactly 5 fields`},
		{"@every", func(s *Spec) { s.Stages[1].Window.Cron = "@every 1h" }, `spec.stages[1]: window: cron "@every 1h": give five fields`},
		{"time zone in the cron", func(s *Spec) { s.Stages[1].Window.Cron = "CRON_TZ=Asia/Tokyo 0 9 * * *" }, `spec.stages[1]: window: cron "CRON_TZ=Asia/Tokyo 0 9 * * *": give five fields (or @hourly, @daily, @weekly, @monthly, @yearly), and the time zone in timeZone`},
		{"window without duration", func(s *Spec) { s.Stages[1].Window.Duration = 0 }, "spec.stages[1]: window: duration: a window needs a positive duration"},
		{"unknown time zone", func(s *Spec) { s.Stages[1].Window.TimeZone = "Mars/Olympus" }, `spec.stages[1]: window: timeZone "Mars/Olympus" is not a known time zone (an IANA name such as Europe/Paris)`},
		{"the machine's time zone", func(s *Spec) { s.Stages[1].Window.TimeZone = "Local" }, `spec.stages[1]: window: timeZone "Local" is not a known time zone`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := good()
			tc.change(&s)
			err := s.Validate()
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

func TestJSONRoundTrips(t *testing.T) {
	for _, tc := range []struct {
		in, out string // out: "" when it is in
		want    any
	}{
		{in: `5`, want: IntOrPercent{Value: 5}},
		{in: `"5"`, out: `5`, want: IntOrPercent{Value: 5}},
		{in: `"25%"`, want: IntOrPercent{Value: 25, Percent: true}},
		{in: `" 50% "`, out: `"50%"`, want: IntOrPercent{Value: 50, Percent: true}},
		{in: `0`, want: IntOrPercent{}},
		{in: `"90s"`, out: `"1m30s"`, want: Duration(90 * time.Second)},
		{in: `"10m"`, out: `"10m0s"`, want: Duration(10 * time.Minute)},
		{in: `"1h30m"`, out: `"1h30m0s"`, want: Duration(90 * time.Minute)},
	} {
		got := reflect.New(reflect.TypeOf(tc.want))
		if err := json.Unmarshal([]byte(tc.in), got.Interface()); err != nil {
			t.Errorf("%s: %v", tc.in, err)
			continue
		}
		if !reflect.DeepEqual(got.Elem().Interface(), tc.want) {
			t.Errorf("%s read as %+v, want %+v", tc.in, got.Elem().Interface(), tc.want)
		}
		b, err := json.Marshal(got.Elem().Interface())
		if want := cmpOr(tc.out, tc.in); err != nil || string(b) != want {
			t.Errorf("%s written as %s (%v), want %s", tc.in, b, err, want)
		}
	}
	// A whole spec comes back as it went.
	s := good()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var back Spec
	if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back, s) {
		t.Errorf("spec %s read back as %+v (%v)", b, back, err)
	}
	// null is no value, as for encoding/json's own types.
	var st Stage
	if err := json.Unmarshal([]byte(`{"name":"a","maxConcurrency":null,"progressDeadline":null}`), &st); err != nil ||
		st.MaxConcurrency != nil || st.ProgressDeadline != 0 {
		t.Errorf("nulls read as %+v (%v)", st, err)
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func TestJSONRefusesBadValues(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`"5x"`, `"5x" is not a count or a percentage such as "25%"`},
		{`"%"`, `"%" is not a count or a percentage such as "25%"`},
		{`1.5`, `expected a count or a percentage such as "25%", not 1.5`},
		{`true`, `expected a count or a percentage such as "25%", not true`},
	} {
		var v IntOrPercent
		if err := json.Unmarshal([]byte(tc.in), &v); err == nil || err.Error() != tc.want {
			t.Errorf("IntOrPercent %s: error %v, want %q", tc.in, err, tc.want)
		}
	}
	for _, tc := range []struct{ in, want string }{
		{`"10 minutes"`, `"10 minutes" is not a duration (such as "90s" or "10m")`},
		{`""`, `"" is not a duration (such as "90s" or "10m")`},
		{`600`, `a duration is a string such as "90s" or "10m", not 600`},
	} {
		var d Duration
		if err := json.Unmarshal([]byte(tc.in), &d); err == nil || err.Error() != tc.want {
			t.Errorf("Duration %s: error %v, want %q", tc.in, err, tc.want)
		}
	}
	// Within a spec, the error names the stage and the field.
	for _, tc := range []struct{ in, want string }{
		{`{"stages":[{"name":"a"},{"name":"b","progressDeadline":"5x"}]}`, `spec.stages[1]: progressDeadline: "5x" is not a duration (such as "90s" or "10m")`},
		{`{"stages":[{"name":"a","maxConcurrency":"lots"}]}`, `spec.stages[0]: maxConcurrency: "lots" is not a count or a percentage such as "25%"`},
		{`{"stages":[{"name":"a","before":[{"type":"wait","duration":60}]}]}`, `spec.stages[0]: before: a duration is a string such as "90s" or "10m", not 60`},
		{`{"stages":[{"name":"a","clusters":"c1"}]}`, `spec.stages[0]: clusters: expected []string, not string`},
	} {
		var s Spec
		if err := json.Unmarshal([]byte(tc.in), &s); err == nil || err.Error() != tc.want {
			t.Errorf("%s: error %v, want %q", tc.in, err, tc.want)
		}
	}
}

func TestIntOrPercentOf(t *testing.T) {
	for _, tc := range []struct {
		v       *IntOrPercent
		n, def  int
		want    int
		explain string
	}{
		{nil, 7, 3, 3, "nil is the default"},
		{count(2), 7, 0, 2, "a count is itself"},
		{percent(10), 5, 0, 1, "a share rounds up"},
		{percent(50), 5, 0, 3, "half of 5 is 3"},
		{percent(100), 5, 0, 5, "all"},
		{percent(0), 5, 9, 0, "none"},
	} {
		if got := tc.v.Of(tc.n, tc.def); got != tc.want {
			t.Errorf("%s: %v of %d = %d, want %d", tc.explain, tc.v, tc.n, got, tc.want)
		}
	}
}

// member is "provider+cluster" with labels.
func member(key string, labels ...string) Member { return Member{Key: key, Labels: labels} }

func TestLayoutSelectsEachClusterForTheFirstStageThatNamesIt(t *testing.T) {
	members := []Member{
		member("p+c5"), member("p+c1", "edge"), member("q+c1"), member("p+c2", "edge", "eu"),
		member("p+c3", "eu"), member("p+c4", "edge", "eu"),
	}
	s := Spec{Stages: []Stage{
		{Name: "by-name", Clusters: []string{"q+c1", "c5", "c9"}},                               // "c5" in any provider; c9 is nowhere
		{Name: "by-labels", ClusterLabels: []string{"edge", "eu"}},                              // every label
		{Name: "first-wins", Clusters: []string{"c5", "p+c4"}, ClusterLabels: []string{"edge"}}, // c5, c4 taken already
		{Name: "rest"},
	}}
	plan, batchOf, stages, err := Layout("rings", s, members, 50)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{{"p+c5", "q+c1"}, {"p+c2", "p+c4"}, {"p+c1"}, {"p+c3"}}
	if !reflect.DeepEqual(stages, want) {
		t.Errorf("stages %v, want %v", stages, want)
	}
	if plan.Strategy != "rings" || plan.Rollback != RollbackAuto {
		t.Errorf("plan %q rollback %q, want rings and the default auto", plan.Strategy, plan.Rollback)
	}
	wantBatch := map[string]int{"p+c5": 0, "q+c1": 0, "p+c2": 1, "p+c4": 1, "p+c1": 2, "p+c3": 3}
	if !reflect.DeepEqual(batchOf, wantBatch) {
		t.Errorf("batches %v, want %v", batchOf, wantBatch)
	}
	for i, ps := range plan.Stages {
		if ps.Name != s.Stages[i].Name || ps.Clusters != len(want[i]) || ps.FirstBatch != i || ps.Batches != 1 ||
			ps.ProgressDeadline != DefaultProgressDeadline || ps.MaxFailures != 0 || ps.MaxUnavailable != len(want[i]) {
			t.Errorf("stage %d planned as %+v", i, ps)
		}
	}
}

func TestLayoutKeepsAnEmptyStage(t *testing.T) {
	s := Spec{Stages: []Stage{{Name: "canary", Clusters: []string{"nowhere"}}, {Name: "rest"}}}
	plan, _, stages, err := Layout("s", s, []Member{member("p+a"), member("p+b")}, 50)
	if err != nil {
		t.Fatal(err)
	}
	if plan.Stages[0].Clusters != 0 || plan.Stages[0].Batches != 0 || plan.Stages[1].FirstBatch != 0 || plan.Stages[1].Batches != 1 ||
		len(stages[0]) != 0 || len(stages[1]) != 2 {
		t.Errorf("plan %+v, stages %v", plan, stages)
	}
}

func TestLayoutSortsByLabel(t *testing.T) {
	for _, tc := range []struct {
		name    string
		members []Member
		want    []string
	}{{
		name:    "numerically, not lexically",
		members: []Member{member("p+a", "ring=10"), member("p+b", "ring=9"), member("p+c", "ring=1.5")},
		want:    []string{"p+c", "p+b", "p+a"},
	}, {
		name:    "lexically when not numbers",
		members: []Member{member("p+a", "ring=gamma"), member("p+b", "ring=alpha"), member("p+c", "ring=beta")},
		want:    []string{"p+b", "p+c", "p+a"},
	}, {
		name: "numbers before words, whatever the order they come in",
		members: []Member{member("p+a", "ring=1a"), member("p+b", "ring=10"), member("p+c", "ring=9"),
			member("p+d", "ring=b")},
		want: []string{"p+c", "p+b", "p+a", "p+d"},
	}, {
		name:    "clusters without the label last, by name; ties by name",
		members: []Member{member("p+e"), member("p+d", "ring=2"), member("p+a"), member("p+c", "ring=1", "edge"), member("p+b", "ring=2")},
		want:    []string{"p+c", "p+b", "p+d", "p+a", "p+e"},
	}, {
		name:    "another key's value does not count",
		members: []Member{member("p+a", "zone=1"), member("p+b", "ring=5"), member("p+c", "ringer=0")},
		want:    []string{"p+b", "p+a", "p+c"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, stages, err := Layout("s", Spec{Stages: []Stage{{Name: "all", SortByLabel: "ring"}}}, tc.members, 50)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(stages[0], tc.want) {
				t.Errorf("order %v, want %v", stages[0], tc.want)
			}
		})
	}
}

func TestLayoutCutsBatchesByPerBatchAndMaxConcurrency(t *testing.T) {
	ten := make([]Member, 10)
	for i := range ten {
		ten[i] = member(fmt.Sprintf("p+c%02d", i))
	}
	for _, tc := range []struct {
		name                 string
		conc                 *IntOrPercent
		perBatch             int
		batches, wave, first int // first: the batch of p+c09
	}{
		{"everything at once", nil, 50, 1, 1, 0},
		{"perBatch bounds the batch; all batches in one wave", nil, 4, 3, 2, 2},
		{"maxConcurrency bounds the batch", count(3), 50, 3, 1, 2},
		{"a share of the stage", percent(50), 50, 2, 1, 1},
		{"a share rounds up: 20% of 9 is 2", percent(20), 50, 5, 1, 4},
		{"perBatch below maxConcurrency: a wave of batches", count(6), 2, 5, 3, 4},
		{"maxConcurrency above the stage", count(99), 50, 1, 1, 0},
		{"perBatch 0 is one cluster a batch", count(2), 0, 9, 2, 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := Spec{Stages: []Stage{{Name: "canary", Clusters: []string{"c00"}}, {Name: "all", MaxConcurrency: tc.conc}}}
			plan, batchOf, _, err := Layout("s", s, ten, tc.perBatch)
			if err != nil {
				t.Fatal(err)
			}
			ps := plan.Stages[1]
			if ps.FirstBatch != 1 || ps.Clusters != 9 || ps.Batches != tc.batches || ps.Wave != tc.wave {
				t.Errorf("stage planned as first batch %d, %d clusters, %d batches, wave %d; want 1, 9, %d, %d",
					ps.FirstBatch, ps.Clusters, ps.Batches, ps.Wave, tc.batches, tc.wave)
			}
			if got := batchOf["p+c09"]; got != 1+tc.first {
				t.Errorf("p+c09 in batch %d, want %d", got, 1+tc.first)
			}
			// No batch is larger than perBatch or the stage's concurrency.
			size := map[int]int{}
			for _, b := range batchOf {
				size[b]++
			}
			for b, n := range size {
				if n > max(1, tc.perBatch) || n > max(1, tc.conc.Of(9, 9)) {
					t.Errorf("batch %d has %d clusters", b, n)
				}
			}
		})
	}
}

func TestLayoutResolvesTheStageGates(t *testing.T) {
	s := good()
	members := []Member{member("p+cluster1")}
	for i := range 8 {
		members = append(members, member(fmt.Sprintf("p+e%d", i), "edge", fmt.Sprintf("ring=%d", 8-i)))
	}
	plan, _, stages, err := Layout("rings", s, members, 50)
	if err != nil {
		t.Fatal(err)
	}
	edge := plan.Stages[1]
	if plan.Rollback != RollbackManual || plan.Stages[0].ProgressDeadline != 5*time.Minute || plan.Stages[0].MinSuccessTime != time.Minute ||
		!reflect.DeepEqual(plan.Stages[0].Before, s.Stages[0].Before) {
		t.Errorf("canary planned as %+v (rollback %q)", plan.Stages[0], plan.Rollback)
	}
	if edge.Clusters != 8 || edge.Batches != 4 || edge.Wave != 1 || edge.MaxUnavailable != 1 || edge.MaxFailures != 1 ||
		edge.Window != s.Stages[1].Window || !reflect.DeepEqual(edge.After, s.Stages[1].After) {
		t.Errorf("edge planned as %+v", edge)
	}
	if want := []string{"p+e7", "p+e6", "p+e5", "p+e4", "p+e3", "p+e2", "p+e1", "p+e0"}; !reflect.DeepEqual(stages[1], want) {
		t.Errorf("edge in order %v, want %v (by ring)", stages[1], want)
	}
	if plan.Stages[2].Clusters != 0 || plan.Stages[2].FirstBatch != 5 {
		t.Errorf("rest planned as %+v", plan.Stages[2])
	}
	if plan.Offline == nil || *plan.Offline != (Offline{Policy: OfflineWait, After: Duration(DefaultOfflineAfter)}) {
		t.Errorf("offline policy planned as %+v, want the defaults", plan.Offline)
	}
	s.Offline = &Offline{Policy: OfflineSkip}
	if plan, _, _, _ = Layout("rings", s, members, 50); *plan.Offline != (Offline{Policy: OfflineSkip, After: Duration(DefaultOfflineAfter)}) {
		t.Errorf("offline policy planned as %+v", plan.Offline)
	}
}

func TestLayoutNamesTheClustersNoStageSelects(t *testing.T) {
	s := Spec{Stages: []Stage{{Name: "edge", ClusterLabels: []string{"edge"}}}}
	var members []Member
	for i := range 8 {
		members = append(members, member(fmt.Sprintf("p+c%d", i)))
	}
	members = append(members, member("p+e", "edge"))
	_, _, _, err := Layout("rings", s, members, 50)
	want := `rollout strategy "rings": no stage selects cluster(s) p+c0, p+c1, p+c2, p+c3, p+c4 and 3 more; add them to a stage, or end with a stage that selects no labels or names (it takes every cluster left)`
	if err == nil || err.Error() != want {
		t.Errorf("error %v\nwant %s", err, want)
	}
	_, _, _, err = Layout("rings", s, members[:2], 50)
	if err == nil || !strings.Contains(err.Error(), "cluster(s) p+c0, p+c1; add them") {
		t.Errorf("error %v", err)
	}
}

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t.UTC()
}

func TestWindowAt(t *testing.T) {
	for _, tc := range []struct {
		name   string
		w      Window
		now    string
		want   Opening
		errMsg string
	}{{
		name: "open now: until it closes",
		w:    Window{Cron: "0 22 * * *", Duration: Duration(6 * time.Hour)},
		now:  "2024-05-14T23:30:00Z",
		want: Opening{Open: true, Closes: utc("2024-05-15T04:00:00Z")},
	}, {
		name: "open from the very instant it opens",
		w:    Window{Cron: "0 22 * * *", Duration: Duration(time.Hour)},
		now:  "2024-05-14T22:00:00Z",
		want: Opening{Open: true, Closes: utc("2024-05-14T23:00:00Z")},
	}, {
		name: "closed at the instant it closes: the next opening",
		w:    Window{Cron: "0 22 * * *", Duration: Duration(time.Hour)},
		now:  "2024-05-14T23:00:00Z",
		want: Opening{Opens: utc("2024-05-15T22:00:00Z"), Closes: utc("2024-05-15T23:00:00Z")},
	}, {
		name: "closed: weekdays only, from a Saturday",
		w:    Window{Cron: "30 1 * * 1-5", Duration: Duration(2 * time.Hour)},
		now:  "2024-05-18T12:00:00Z",
		want: Opening{Opens: utc("2024-05-20T01:30:00Z"), Closes: utc("2024-05-20T03:30:00Z")},
	}, {
		name: "Paris at 9:00 is 8:00 UTC before the change to summer time",
		w:    Window{Cron: "0 9 * * *", Duration: Duration(time.Hour), TimeZone: "Europe/Paris"},
		now:  "2024-03-29T12:00:00Z",
		want: Opening{Opens: utc("2024-03-30T08:00:00Z"), Closes: utc("2024-03-30T09:00:00Z")},
	}, {
		name: "and 7:00 UTC on the day of the change",
		w:    Window{Cron: "0 9 * * *", Duration: Duration(time.Hour), TimeZone: "Europe/Paris"},
		now:  "2024-03-30T12:00:00Z",
		want: Opening{Opens: utc("2024-03-31T07:00:00Z"), Closes: utc("2024-03-31T08:00:00Z")},
	}, {
		name: "open in Paris at 9:30 summer time",
		w:    Window{Cron: "0 9 * * *", Duration: Duration(time.Hour), TimeZone: "Europe/Paris"},
		now:  "2024-03-31T07:30:00Z",
		want: Opening{Open: true, Closes: utc("2024-03-31T08:00:00Z")},
	}, {
		name: "2:30 does not exist in Paris on 31 March 2024: the next opening is the day after",
		w:    Window{Cron: "30 2 * * *", Duration: Duration(time.Hour), TimeZone: "Europe/Paris"},
		now:  "2024-03-30T12:00:00Z",
		want: Opening{Opens: utc("2024-04-01T00:30:00Z"), Closes: utc("2024-04-01T01:30:00Z")},
	}, {
		name: "back to winter time: 22:00 in Paris is 21:00 UTC",
		w:    Window{Cron: "0 22 * * *", Duration: Duration(4 * time.Hour), TimeZone: "Europe/Paris"},
		now:  "2024-10-27T23:00:00Z",
		want: Opening{Open: true, Closes: utc("2024-10-28T01:00:00Z")},
	}, {
		name:   "an unknown time zone",
		w:      Window{Cron: "0 9 * * *", Duration: Duration(time.Hour), TimeZone: "Nowhere/Town"},
		now:    "2024-03-30T12:00:00Z",
		errMsg: "unknown time zone Nowhere/Town",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.w.At(utc(tc.now))
			if tc.errMsg != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errMsg) {
					t.Errorf("error %v, want %q", err, tc.errMsg)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Open != tc.want.Open || !got.Opens.Equal(tc.want.Opens) || !got.Closes.Equal(tc.want.Closes) {
				t.Errorf("at %s: %+v, want %+v", tc.now, got, tc.want)
			}
			if got.Closes.Location() != time.UTC || (!got.Open && got.Opens.Location() != time.UTC) {
				t.Errorf("instants not in UTC: %+v", got)
			}
		})
	}
}
