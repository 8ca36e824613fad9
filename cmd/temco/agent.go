package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"

	"github.com/temco/temco/activities/cluster"
	"github.com/temco/temco/edgeagent"
	"github.com/temco/temco/internal/adapters/tracing"
)

// agentCmd runs temco agent inside an edge cluster (docs/agent.md).
func agentCmd() *cobra.Command {
	var apiURL, credFile, credSecret, joinFile, kubeconfig string
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
which it keeps in --credential-file or --credential-secret. The tokens are read from
files, Secrets or the environment, never from a flag.`,
		Args: cobra.NoArgs,
		RunE: traced("temco-agent", func(cmd *cobra.Command, _ []string) error {
			if apiURL == "" || (credFile == "") == (credSecret == "") {
				return errors.New("--api (TEMCO_AGENT_API) and one of --credential-file (TEMCO_AGENT_CREDENTIAL_FILE) and --credential-secret (TEMCO_AGENT_CREDENTIAL_SECRET) are required")
			}
			log := newLogger()
			kube, err := kubeConfig(kubeconfig)
			if err != nil {
				return err
			}
			var keep edgeagent.Credentials = edgeagent.File(credFile)
			if credSecret != "" {
				ns, name, ok := strings.Cut(credSecret, "/")
				if !ok || ns == "" || name == "" {
					return fmt.Errorf("--credential-secret %q: <namespace>/<name>", credSecret)
				}
				cs, err := kubernetes.NewForConfig(kube)
				if err != nil {
					return err
				}
				keep = edgeagent.Secret{Client: cs, Namespace: ns, Name: name}
			}
			// With traces on, each of its calls is a trace that the api's spans join.
			hc := &http.Client{Timeout: 2 * time.Minute, Transport: tracing.Transport(nil)}
			credential, err := agentCredential(cmd.Context(), apiURL, keep, joinFile, hc)
			if err != nil {
				return err
			}
			a := &edgeagent.Agent{API: &edgeagent.API{Base: apiURL, Credential: credential, HTTP: hc},
				Local: cluster.NewLocal("agent", kube, ""), Log: log, Poll: poll}
			log.Info("temco agent started", "api", apiURL)
			return a.Run(cmd.Context())
		}),
	}
	f := cmd.Flags()
	f.StringVar(&apiURL, "api", env("TEMCO_AGENT_API", ""), "temco's api, e.g. https://temco.example.com [TEMCO_AGENT_API]")
	f.StringVar(&credFile, "credential-file", env("TEMCO_AGENT_CREDENTIAL_FILE", ""), "where the agent keeps its credential (written at its first join) [TEMCO_AGENT_CREDENTIAL_FILE]")
	f.StringVar(&credSecret, "credential-secret", env("TEMCO_AGENT_CREDENTIAL_SECRET", ""), "or a Secret of this cluster keeping it, <namespace>/<name> (in a pod) [TEMCO_AGENT_CREDENTIAL_SECRET]")
	f.StringVar(&joinFile, "join-token-file", env("TEMCO_AGENT_JOIN_TOKEN_FILE", ""), "a file holding the join token, used when no credential is kept; or set TEMCO_AGENT_JOIN_TOKEN [TEMCO_AGENT_JOIN_TOKEN_FILE]")
	f.StringVar(&kubeconfig, "kubeconfig", env("KUBECONFIG", ""), "kubeconfig of this cluster; empty: the in-cluster service account [KUBECONFIG]")
	f.DurationVar(&poll, "poll", 0, "how often to ask for work (0: as temco says)")
	return cmd
}

// agentCredential is the credential keep holds, or one a join with the join token (a
// file's, or TEMCO_AGENT_JOIN_TOKEN) gave, then kept there.
func agentCredential(ctx context.Context, apiURL string, keep edgeagent.Credentials, joinFile string, hc *http.Client) (string, error) {
	if cred, err := keep.Load(ctx); err != nil || cred != "" {
		return cred, err
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
		return "", errors.New("no credential is kept and no join token was given (--join-token-file or TEMCO_AGENT_JOIN_TOKEN)")
	}
	j, err := edgeagent.Join(ctx, apiURL, token, hc)
	if err != nil {
		return "", fmt.Errorf("join: %w", err)
	}
	if err := keep.Save(ctx, j.Credential); err != nil {
		return "", err
	}
	newLogger().Info("temco agent joined", "cluster", j.Cluster)
	return j.Credential, nil
}
