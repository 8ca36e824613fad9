package main

import (
	"context"
	"errors"
	"net/http"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/temco/temco/cmd/temco/emcoctl"
)

// defaultAPI is where the client goes without --api, TEMCO_API or --config: emcoctl's
// default orchestrator port.
const defaultAPI = "http://127.0.0.1:9015"

// clientCmds are emcoctl's commands, with its flags: apply, update, delete and get of
// resource files. Every verb takes the same flags, so that scripts may pass one set to
// all of them; waitHelp says what --timeout and --wait do for the verb.
func clientCmds() []*cobra.Command {
	type runFunc func(*emcoctl.Runner, context.Context, []*emcoctl.Document) error
	type waitHelp struct{ timeout, wait string }
	mk := func(use, short string, run runFunc, help waitHelp) *cobra.Command {
		var files, oldFiles, values []string
		var config string
		var waitTime int
		r := &emcoctl.Runner{HTTP: &http.Client{Timeout: time.Minute}}
		cmd := &cobra.Command{
			Use:   use + " -f FILE [-v VALUES]",
			Short: short,
			Args:  cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				files = append(files, oldFiles...)
				if len(files) == 0 {
					return errors.New("no resource file: name one with -f FILE")
				}
				if _, set := os.LookupEnv("TEMCO_API"); !set && !cmd.Flags().Changed("api") && config != "" {
					api, err := emcoctl.APIFromConfig(config)
					if err != nil {
						return err
					}
					r.API = api
				}
				r.Out = cmd.OutOrStdout()
				r.WaitTime = time.Duration(waitTime) * time.Second
				docs, err := emcoctl.Load(files, values)
				if err != nil {
					return err
				}
				return run(r, cmd.Context(), docs)
			},
		}
		f := cmd.Flags()
		f.StringSliceVarP(&files, "filename", "f", nil, "emcoctl resource file (multi-document YAML); repeatable, all are read in order")
		f.StringSliceVarP(&values, "values", "v", nil, "values file: renders the resource files as Go templates; repeatable, later files override earlier ones")
		f.StringVar(&r.API, "api", env("TEMCO_API", defaultAPI), "temco API base URL [TEMCO_API]")
		f.StringVar(&config, "config", "", "emcoctl config file: the API is its ingress, else its orchestrator (unless --api or TEMCO_API is given)")
		f.StringVarP(&r.Token, "token", "t", env("TEMCO_TOKEN", ""), "bearer token, when the API requires one (prefer the variable: flags show in ps) [TEMCO_TOKEN]")
		f.BoolVarP(&r.Stop, "stop", "s", false, "stop at the first document the API refuses")
		f.IntVarP(&waitTime, "waitTime", "w", 0, "seconds to pause after a 202 answer before the next document")
		f.DurationVar(&r.Timeout, "timeout", 5*time.Minute, help.timeout)
		f.BoolVar(&r.Wait, "wait", false, help.wait)
		// Older temco spellings of emcoctl's -f and -s.
		f.StringSliceVar(&oldFiles, "file", nil, "same as --filename")
		f.BoolVar(&r.Stop, "stop-on-error", false, "same as --stop")
		_ = f.MarkHidden("file")
		_ = f.MarkHidden("stop-on-error")
		return cmd
	}
	const awaited = "longest wait for one awaited operation"
	// update and get skip every lifecycle action, so they have nothing to await.
	harmless := func(verb string) string {
		return "accepted as apply takes it; harmless here: " + verb + " awaits nothing"
	}
	return []*cobra.Command{
		mk("apply", "Create the resources of emcoctl files, in order (a logical cloud's operations are awaited)", (*emcoctl.Runner).Apply,
			waitHelp{awaited, "also await a DIG's instantiate, update, rollback and terminate"}),
		mk("update", "Replace the resources of emcoctl files, in order (actions are skipped)", (*emcoctl.Runner).Update,
			waitHelp{harmless("update"), harmless("update")}),
		mk("delete", "Delete the resources of emcoctl files, in reverse (instantiate and apply become an awaited terminate)", (*emcoctl.Runner).Delete,
			waitHelp{awaited, "accepted as apply takes it; harmless here: delete always awaits its terminates"}),
		mk("get", "Print the resources of emcoctl files (and status anchors)", (*emcoctl.Runner).Get,
			waitHelp{harmless("get"), harmless("get")}),
	}
}
