package browser

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp/kb"
)

// gridAnswer is GET /v2/fleet/clusters (dashboard/README.md).
type gridAnswer struct {
	States    []string       `json:"states"`
	Counts    map[string]int `json:"counts"`
	Providers []string       `json:"providers"`
	Clusters  struct {
		Provider []int    `json:"provider"`
		Name     []string `json:"name"`
		State    []int    `json:"state"`
		DIGs     []int    `json:"digs"`
	} `json:"clusters"`
	Total int `json:"total"`
}

func fleetGrid(t *testing.T) gridAnswer {
	t.Helper()
	var a gridAnswer
	if err := json.Unmarshal(must(t, 200, "GET", "/fleet/clusters", nil), &a); err != nil {
		t.Fatal(err)
	}
	return a
}

// at is the index of cluster provider+name in the answer's order and its state (-1: absent).
func (a gridAnswer) at(key string) (int, string) {
	for i, n := range a.Clusters.Name {
		if a.Providers[a.Clusters.Provider[i]]+"+"+n == key {
			return i, a.States[a.Clusters.State[i]]
		}
	}
	return -1, ""
}

// The home's grid of clusters: a cell per registered cluster, its legend counting the
// cells by state as the API does and saying so in words; the keyboard reaches the grid,
// arrow keys move to a cluster (named below it) and Enter opens its view; a legend state
// filters the grid to its clusters and lists them as links. Also how long 10,000 cells
// take to draw in this browser.
func TestClusterGrid(t *testing.T) {
	dev := devCluster.name
	const down, idle = "grid-down", "grid-idle"
	registerUnreachableCluster(t, down)
	mustMultipart(t, "/cluster-providers/"+provider+"/clusters", res(idle, nil), []byte(devKubeconfig(t)))
	a := newProject(t, "br-grid-a", dev)
	a.deploy(dev)
	must(t, 202, "POST", a.dig()+"/approve", nil)
	must(t, 202, "POST", a.dig()+"/instantiate", nil)
	b := newProject(t, "br-grid-b", down)
	b.deploy(down)
	must(t, 202, "POST", b.dig()+"/approve", nil)
	must(t, 202, "POST", b.dig()+"/instantiate", nil)
	t.Cleanup(func() { _, _, _ = call("POST", b.dig()+"/stop", nil) })
	p := newPage(t)
	p.extra = func() string { return string(must(t, 200, "GET", "/fleet/clusters", nil)) }

	keyDown, keyDev, keyIdle := provider+"+"+down, provider+"+"+dev, provider+"+"+idle
	var api gridAnswer
	a.eventually("the API's grid: dev Applied, grid-down Retrying, grid-idle none", 5*time.Minute, func() error {
		api = fleetGrid(t)
		_, sDev := api.at(keyDev)
		_, sDown := api.at(keyDown)
		_, sIdle := api.at(keyIdle)
		if sDev != "Applied" || sDown != "Retrying" || sIdle != "none" {
			return fmt.Errorf("dev %q, grid-down %q, grid-idle %q; the DIGs with clusters not Applied: %s", sDev, sDown, sIdle, notApplied(t))
		}
		return nil
	})

	p.open("#/clusters")
	grid := `[data-testid=cluster-grid]`
	// The page's legend and cells as the API counts them (both read again until they agree:
	// other tests' clusters may change meanwhile).
	p.waitUntil("the legend counts what the API counts, a cell per cluster", time.Minute, func() (bool, string, error) {
		api = fleetGrid(t)
		page, err := eval[map[string]int](p, `Object.fromEntries([...document.querySelectorAll("[data-testid=grid-legend] li[data-state]")]
			.map(l => [l.dataset.state, Number(l.dataset.count)]))`)
		cells, _ := strconv.Atoi(p.attr(grid, "data-cells"))
		return maps.Equal(page, api.Counts) && cells == api.Total && cells >= 3,
			fmt.Sprintf("page %v, %d cells; API %v, %d clusters", page, cells, api.Counts, api.Total), err
	})
	words := p.text(`[data-testid=grid-summary]`)
	if !strings.HasPrefix(words, fmt.Sprintf("%d clusters: ", api.Total)) || !strings.Contains(words, fmt.Sprintf("%d retrying", api.Counts["Retrying"])) ||
		!strings.Contains(words, fmt.Sprintf("%d applied", api.Counts["Applied"])) {
		p.fatalf("the grid's words %q do not say the API's counts %v", words, api.Counts)
	}
	if ms, err := strconv.ParseFloat(p.attr(grid, "data-draw-ms"), 64); err != nil {
		p.fatalf("no drawing time on the grid: %v", err)
	} else {
		t.Logf("the grid of %d cells drew in %.1f ms", api.Total, ms)
	}
	p.noError()
	p.shot("grid")

	// The keyboard: Tab reaches the grid, arrows move to grid-down's cell, named below.
	p.tabTo(grid)
	p.waitUntil("the cursor on the first cell", 10*time.Second, func() (bool, string, error) {
		c := p.attr(`[data-testid=grid-cell]`, "data-cluster")
		i, _ := api.at(c)
		return p.attr(grid, "data-cursor") == "0" && i == 0, "cursor " + p.attr(grid, "data-cursor") + " on " + c, nil
	})
	i, _ := api.at(keyDown)
	cols, err := strconv.Atoi(p.attr(grid, "data-cols"))
	if err != nil || cols < 1 {
		p.fatalf("the grid's columns: %q", p.attr(grid, "data-cols"))
	}
	for range i / cols {
		p.key(kb.ArrowDown)
	}
	for range i % cols {
		p.key(kb.ArrowRight)
	}
	cell := `[data-testid=grid-cell]`
	if got := p.attr(cell, "data-cluster"); got != keyDown || p.attr(cell, "data-state") != "Retrying" ||
		!strings.Contains(p.text(cell), "Retrying, 1 deployment") {
		p.fatalf("after %d down and %d right the cursor is on %q (%s), want %s (cell %d)", i/cols, i%cols, got, p.text(cell), keyDown, i)
	}
	p.key(kb.ArrowLeft)
	if j, _ := api.at(p.attr(cell, "data-cluster")); i > 0 && j != i-1 {
		p.fatalf("left of cell %d the cursor is on cell %d", i, j)
	}
	p.key(kb.ArrowRight)
	if !p.focusIs(grid) {
		p.fatalf("the arrows moved the focus off the grid to %s", p.focused())
	}
	p.shot("grid-cursor")
	p.key(kb.Enter)
	p.waitHash(fmt.Sprintf("#/cp/%s/c/%s", provider, down))
	if h := p.oneH1(); h != "Cluster "+keyDown {
		p.fatalf("Enter on grid-down's cell opened %q", h)
	}
	p.waitVisible(fmt.Sprintf(`table[data-testid=cluster-digs] tr[data-dig=%q]`, b.project+"/ca/v1/dig"), time.Minute)

	// A legend state filters: Retrying's cells alone, and its clusters as links.
	p.open("#/clusters")
	retrying := `[data-testid=grid-legend] li[data-state=Retrying] button`
	p.waitVisible(retrying, time.Minute)
	p.click(retrying)
	link := fmt.Sprintf(`[data-testid=grid-list] ul[data-state=Retrying] a[data-cluster=%q]`, keyDown)
	p.waitVisible(link, 30*time.Second)
	p.waitUntil("the grid filtered to the retrying clusters", 30*time.Second, func() (bool, string, error) {
		api = fleetGrid(t)
		cells, _ := strconv.Atoi(p.attr(grid, "data-cells"))
		links, err := eval[[]string](p, `[...document.querySelectorAll("[data-testid=grid-list] a[data-cluster]")].map(a => a.dataset.cluster)`)
		return cells == api.Counts["Retrying"] && len(links) == cells && slices.Contains(links, keyDown) && !slices.Contains(links, keyDev) &&
				p.attr(retrying, "aria-pressed") == "true",
			fmt.Sprintf("%d cells, links %v, API %d retrying", cells, links, api.Counts["Retrying"]), err
	})
	p.shot("grid-retrying")
	p.follow(fmt.Sprintf("#/cp/%s/c/%s", provider, down))

	// 10,000 cells: how long this browser takes to draw them (the grid redraws each poll).
	p.open("#/clusters")
	p.waitVisible(grid, time.Minute)
	if _, err := eval[bool](p, `(import("./grid.js").then((m) => {
		const g = m.clusterGrid(); document.querySelector("main").append(g.body);
		const n = 10000, st = Array.from({length: n}, (_, i) => i % 1000 === 0 ? 0 : i % 250 === 0 ? 1 : 3);
		const t0 = performance.now();
		g.update({states: m.GRID_STATES, providers: ["cp"], total: n, counts: {Failed: 10, Retrying: 30, Applied: 9960},
			clusters: {provider: st.map(() => 0), name: st.map((_, i) => "c" + i), state: st, digs: st.map(() => 1)}});
		window.gridBench = {total: performance.now() - t0, draw: Number(g.body.querySelector("[data-testid=cluster-grid]").dataset.drawMs),
			cells: Number(g.body.querySelector("[data-testid=cluster-grid]").dataset.cells), words: g.body.querySelector("[data-testid=grid-summary]").textContent};
	}), true)`); err != nil {
		p.fatalf("start the 10,000 cells: %v", err)
	}
	var bench struct {
		Total, Draw float64
		Cells       int
		Words       string
	}
	p.waitUntil("10,000 cells drawn", 30*time.Second, func() (bool, string, error) {
		var err error
		bench.Cells, err = eval[int](p, `window.gridBench?.cells ?? 0`)
		return bench.Cells == 10000, fmt.Sprint(bench.Cells, " cells"), err
	})
	bench.Total, _ = eval[float64](p, `window.gridBench.total`)
	bench.Draw, _ = eval[float64](p, `window.gridBench.draw`)
	bench.Words, _ = eval[string](p, `window.gridBench.words`)
	t.Logf("10,000 cells: update (legend, words, drawing) %.1f ms, drawing alone %.1f ms; %q", bench.Total, bench.Draw, bench.Words)
	if !strings.HasPrefix(bench.Words, "10,000 clusters: 10 failed, 30 retrying, 9,960 applied") {
		t.Errorf("10,000 cells' words: %q", bench.Words)
	}
	// Its time is measured (BENCHMARKS.md), not asserted: these machines are noisy.
}

// devKubeconfig is the dev cluster's kubeconfig.
func devKubeconfig(t *testing.T) string {
	t.Helper()
	kc, err := os.ReadFile(devCluster.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	return string(kc)
}

// notApplied names the fleet's DIGs with a cluster in a state other than Applied.
func notApplied(t *testing.T) string {
	var f struct {
		DIGs []struct {
			Project string         `json:"project"`
			State   string         `json:"state"`
			States  map[string]int `json:"states"`
		} `json:"digs"`
	}
	if err := json.Unmarshal(must(t, 200, "GET", "/fleet?limit=1000", nil), &f); err != nil {
		return err.Error()
	}
	var out []string
	for _, d := range f.DIGs {
		for st := range d.States {
			if st != "Applied" {
				out = append(out, fmt.Sprintf("%s (%s) %v", d.Project, d.State, d.States))
				break
			}
		}
	}
	return strings.Join(out, "; ")
}
