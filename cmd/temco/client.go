package main

import (
	"net/http"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/temco/temco/internal/emcoctl"
)

// clientCmds are emcoctl's commands: apply, update, delete and get of resource files.
func clientCmds() []*cobra.Command {
	var files, values []string
	r := &emcoctl.Runner{Out: os.Stdout, HTTP: &http.Client{Timeout: time.Minute}}
	mk := func(use, short string, run func(*emcoctl.Runner, []*emcoctl.Document) error) *cobra.Command {
		cmd := &cobra.Command{
			Use:   use + " -f FILE [-v VALUES]",
			Short: short,
			Args:  cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				docs, err := emcoctl.Load(files, values)
				if err != nil {
					return err
				}
				return run(r, docs)
			},
		}
		f := cmd.Flags()
		f.StringArrayVarP(&files, "file", "f", nil, "emcoctl resource file (multi-document YAML, a Go template); repeatable")
		f.StringArrayVarP(&values, "values", "v", nil, "values file for the templates; repeatable")
		f.StringVar(&r.API, "api", env("TEMCO_API", "http://127.0.0.1:9015"), "temco API base URL [TEMCO_API]")
		f.StringVar(&r.Token, "token", env("TEMCO_TOKEN", ""), "bearer token, when the API requires one (prefer the variable: flags show in ps) [TEMCO_TOKEN]")
		f.BoolVar(&r.StopOnError, "stop-on-error", false, "stop at the first document that fails")
		f.BoolVar(&r.Wait, "wait", false, "after a DIG's instantiate, update, rollback or terminate, wait until it ends")
		f.DurationVar(&r.Timeout, "timeout", 5*time.Minute, "longest wait for one operation")
		_ = cmd.MarkFlagRequired("file")
		return cmd
	}
	return []*cobra.Command{
		mk("apply", "Create the resources of emcoctl files, in order", (*emcoctl.Runner).Apply),
		mk("update", "Replace the resources of emcoctl files, in order", (*emcoctl.Runner).Update),
		mk("delete", "Delete the resources of emcoctl files, in reverse (instantiate becomes terminate)", (*emcoctl.Runner).Delete),
		mk("get", "Read the resources of emcoctl files", (*emcoctl.Runner).Get),
	}
}
