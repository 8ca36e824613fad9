package main

// The side features (features/registry) in the composition: which are on, from
// --disable-features, and what the api and the worker do with them.

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/temco/temco/api"
	"github.com/temco/temco/features"
	"github.com/temco/temco/features/registry"
)

// featuresConfig is the features an operator switched off, the same for api and worker.
type featuresConfig struct{ disabled []string }

func (c *featuresConfig) bind(cmd *cobra.Command) {
	cmd.Flags().StringSliceVar(&c.disabled, "disable-features", envList("TEMCO_DISABLE_FEATURES"),
		"side features switched off, of "+strings.Join(registry.Names(), ", ")+
			"; api and worker must agree [TEMCO_DISABLE_FEATURES, comma-separated]")
}

// check returns the features on; a name that is no feature's is refused.
func (c featuresConfig) check() ([]features.Feature, error) {
	on, err := registry.Enabled(c.disabled)
	if err != nil {
		return nil, fmt.Errorf("--disable-features (TEMCO_DISABLE_FEATURES): %w", err)
	}
	return on, nil
}

// extensions are every feature's (of all) parts of the api, built with in: those on with
// its starter, those switched off without, so that their routes answer that they are off.
func extensions(all []features.Feature, in features.Mounting, on []features.Feature) []api.Extension {
	var out []api.Extension
	for _, f := range all {
		if f.API == nil {
			continue
		}
		fin := in
		if !slices.ContainsFunc(on, func(o features.Feature) bool { return o.Name == f.Name }) {
			fin.Starter = nil
		}
		out = append(out, f.API(fin))
	}
	return out
}

// serveFeatures runs, each in its goroutine until ctx ends, what the features on run
// beside the api.
func serveFeatures(ctx context.Context, in features.Serving, on []features.Feature) {
	for _, f := range on {
		if f.Serve != nil {
			go f.Serve(ctx, in)
		}
	}
}
