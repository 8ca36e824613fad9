package render

// Bounds on what one app's chart, profile and override values make the worker do: charts
// render in the memory of the worker every tenant shares, so what could never be deployed
// fails the operation at once, with the reason, instead of being retried.

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"time"
)

const (
	// maxObjectsBytes bounds an app's rendered objects, as stored (canonical JSON).
	// kube-prometheus-stack, among the largest charts in use (its CRDs alone are 4.7 MB of
	// YAML), renders 3.2 MB (135 objects, the largest 485 KB); kueue 0.9 MB, cert-manager
	// with its CRDs 0.5 MB. An app is one MongoDB document, of at most 16 MiB, which holds
	// the objects twice once controllers edit them (their rendered base is kept).
	maxObjectsBytes = 6 << 20
	// maxManifestBytes bounds the YAML Helm renders for an app, checked before it is
	// parsed: YAML takes more room than the objects' JSON (kube-prometheus-stack: 5.2 MB).
	maxManifestBytes = 2 * maxObjectsBytes
	// maxObjects bounds an app's objects: kube-prometheus-stack renders 135, and each
	// object is a status in every placement of the app and a step of every apply.
	maxObjects = 5000
	// renderTimeout bounds one rendering of a chart: the largest charts render in seconds
	// (kube-prometheus-stack: 2–4 s on a loaded two-core machine), and past the activity's
	// own 10-minute limit a rendering would be retried, forever, each time anew.
	renderTimeout = 2 * time.Minute
	// maxOverrideIndices bounds the list indices of an app's override values ("a[7]=x"),
	// added up: Helm refuses one index over strvals.MaxIndex (65536), yet each index makes a
	// list that long (1 MiB at the maximum), and a DIG may give thousands of them.
	maxOverrideIndices = 1 << 16
)

// within runs render, failing when it takes longer than timeout. Helm's engine takes no
// context and cannot be stopped: a rendering that overruns goes on in the background until
// it ends, but the activity fails at once, not after its own timeout, to be retried into
// another one.
func within(ctx context.Context, timeout time.Duration, render func() (rendering, error)) (rendering, error) {
	if err := ctx.Err(); err != nil {
		return rendering{}, err
	}
	type result struct {
		r   rendering
		err error
	}
	done := make(chan result, 1) // the rendering's send never blocks, even once abandoned
	go func() {
		defer func() { // the SDK's recovery of the activity's panics does not reach here
			if p := recover(); p != nil {
				done <- result{err: fmt.Errorf("rendering failed: %v", p)}
			}
		}()
		r, err := render()
		done <- result{r, err}
	}()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case res := <-done:
		return res.r, res.err
	case <-ctx.Done():
		return rendering{}, ctx.Err()
	case <-t.C:
		return rendering{}, fmt.Errorf("the chart did not render within %v, the most a chart may take", timeout)
	}
}

// indexRE is a list index of a --set style path, as Helm's strvals reads it (strconv.Atoi).
var indexRE = regexp.MustCompile(`\[([+-]?[0-9]+)\]`)

// checkOverrideIndices refuses override values whose list indices add up to more than
// maxOverrideIndices. Values are searched too (an override's value may set more keys after
// a comma, as with --set), so a value holding "[9]" as text counts as well.
func checkOverrideIndices(overrides map[string]string) error {
	sum := 0
	for k, v := range overrides {
		for _, m := range indexRE.FindAllStringSubmatch(k+"="+v, -1) {
			n, err := strconv.Atoi(m[1])
			if err != nil || n > maxOverrideIndices {
				n = maxOverrideIndices + 1 // Helm refuses it; it is over the sum too
			}
			if sum += max(n, 0); sum > maxOverrideIndices {
				return fmt.Errorf("the list indices of the override values add up to more than %d, the most an app's may", maxOverrideIndices)
			}
		}
	}
	return nil
}

// size is n bytes, in MiB when whole.
func size(n int) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return strconv.Itoa(n>>20) + " MiB"
	}
	return strconv.Itoa(n) + " bytes"
}
