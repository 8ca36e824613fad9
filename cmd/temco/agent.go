package main

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/temco/temco/activities/cluster"
	"github.com/temco/temco/edgeagent"
)

// agentCmd runs temco agent inside an edge cluster (docs/agent.md).
func agentCmd() *cobra.Command {
	var apiURL, credFile, joinFile, kubeconfig string
	var poll time.Duration
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Apply what temco places on this cluster, calling temco's api from inside the cluster",
		Long: `Runs inside a cluster registered with spec.access "agent", with that cluster's own
credentials (its service account, or --kubeconfig). It opens only outbound connections to
temco's api: it asks for the work published to its cluster, applies it with server-side
apply as temco's workers apply to the clusters they reach, and reports the objects'
statuses back. On its first start it exchanges the join token an admin issued
(POST /v2/cluster-providers/{p}/clusters/{c}/agent-token) for a credential of its own,
which it keeps in --credential-file. The tokens are read from files (or the environment),
never from a flag.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if apiURL == "" || credFile == "" {
				return errors.New("--api (TEMCO_AGENT_API) and --credential-file (TEMCO_AGENT_CREDENTIAL_FILE) are required")
			}
			log := newLogger()
			hc := &http.Client{Timeout: 2 * time.Minute}
			credential, err := agentCredential(cmd, apiURL, credFile, joinFile, hc)
			if err != nil {
				return err
			}
			kube, err := kubeConfig(kubeconfig)
			if err != nil {
				return err
			}
			a := &edgeagent.Agent{API: &edgeagent.API{Base: apiURL, Credential: credential, HTTP: hc},
				Local: cluster.NewLocal("agent", kube), Log: log, Poll: poll}
			log.Info("temco agent started", "api", apiURL)
			return a.Run(cmd.Context())
		},
	}
	f := cmd.Flags()
	f.StringVar(&apiURL, "api", env("TEMCO_AGENT_API", ""), "temco's api, e.g. https://temco.example.com [TEMCO_AGENT_API]")
	f.StringVar(&credFile, "credential-file", env("TEMCO_AGENT_CREDENTIAL_FILE", ""), "where the agent keeps its credential (written at its first join) [TEMCO_AGENT_CREDENTIAL_FILE]")
	f.StringVar(&joinFile, "join-token-file", env("TEMCO_AGENT_JOIN_TOKEN_FILE", ""), "a file holding the join token, used when the credential file holds none; or set TEMCO_AGENT_JOIN_TOKEN [TEMCO_AGENT_JOIN_TOKEN_FILE]")
	f.StringVar(&kubeconfig, "kubeconfig", env("KUBECONFIG", ""), "kubeconfig of this cluster; empty: the in-cluster service account [KUBECONFIG]")
	f.DurationVar(&poll, "poll", 0, "how often to ask for work (0: as temco says)")
	return cmd
}

// agentCredential reads the agent's credential from credFile, or joins with the join
// token (a file's, or TEMCO_AGENT_JOIN_TOKEN) and keeps the credential there.
func agentCredential(cmd *cobra.Command, apiURL, credFile, joinFile string, hc *http.Client) (string, error) {
	if b, err := os.ReadFile(credFile); err == nil && strings.TrimSpace(string(b)) != "" {
		return strings.TrimSpace(string(b)), nil
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	token := os.Getenv("TEMCO_AGENT_JOIN_TOKEN")
	if joinFile != "" {
		b, err := os.ReadFile(joinFile)
		if err != nil {
			return "", err
		}
		token = string(b)
	}
	if token = strings.TrimSpace(token); token == "" {
		return "", fmt.Errorf("%s holds no credential and no join token was given (--join-token-file or TEMCO_AGENT_JOIN_TOKEN)", credFile)
	}
	j, err := edgeagent.Join(cmd.Context(), apiURL, token, hc)
	if err != nil {
		return "", fmt.Errorf("join: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(credFile), 0o700); err != nil {
		return "", err
	}
	if err := os.WriteFile(credFile, []byte(j.Credential+"\n"), 0o600); err != nil {
		return "", err
	}
	newLogger().Info("temco agent joined", "cluster", j.Cluster)
	return j.Credential, nil
}
