package main

import (
	"net/http"
	"os"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/temco/temco/client"
	"github.com/temco/temco/hub"
	"github.com/temco/temco/internal/adapters/tracing"
)

// hubCmd runs the declarative front door: temco's kinds (temco.io/v1alpha1) on a hub
// cluster, reconciled into temco through its REST API (docs/hub.md).
func hubCmd() *cobra.Command {
	var kubeconfig, api, namespace, health string
	var secrets []string
	var elect bool
	cmd := &cobra.Command{
		Use:   "hub",
		Short: "Reconcile temco's resources declared as Kubernetes objects on a hub cluster",
		Long: `Watches temco.io/v1alpha1 objects (ClusterProvider, Cluster, Project, LogicalCloud,
CompositeApp, DeploymentIntentGroup) on the hub cluster and brings temco in step with them
through its REST API, writing their status back. The token (an admin's) is read from
TEMCO_TOKEN only. With --leader-elect (the default) several may run; one works at a time.`,
		Args: cobra.NoArgs,
		RunE: traced("temco-hub", func(cmd *cobra.Command, _ []string) error {
			kube, err := kubeConfig(kubeconfig)
			if err != nil {
				return err
			}
			log := newLogger()
			ctrl.SetLogger(logr.FromSlogHandler(log.Handler()))
			log.Info("hub", "api", api, "namespace", namespace, "leader_elect", elect)
			// With traces on, each of its calls is a trace that the api's spans join.
			calls := &client.Client{Base: api, Token: os.Getenv("TEMCO_TOKEN"), Name: "temco-hub",
				HTTP: &http.Client{Timeout: time.Minute, Transport: tracing.Transport(nil)}}
			err = hub.Run(cmd.Context(), hub.Config{
				Kube:             kube,
				API:              calls,
				Namespace:        namespace,
				SecretNamespaces: secrets,
				LeaderElect:      elect,
				HealthAddr:       health,
			})
			if err != nil && cmd.Context().Err() != nil {
				return nil
			}
			return err
		}),
	}
	f := cmd.Flags()
	f.StringVar(&kubeconfig, "kubeconfig", env("KUBECONFIG", ""), "kubeconfig of the hub cluster; empty: the in-cluster service account [KUBECONFIG]")
	f.StringVar(&api, "api", env("TEMCO_API", defaultAPI), "temco API base URL [TEMCO_API]")
	f.StringVar(&namespace, "namespace", env("TEMCO_HUB_NAMESPACE", "temco-system"), "the hub controller's namespace: its lease, and the Secrets cluster-scoped objects name [TEMCO_HUB_NAMESPACE]")
	f.StringSliceVar(&secrets, "secret-namespaces", envList("TEMCO_HUB_SECRET_NAMESPACES"), "comma-separated namespaces whose Secrets the hub reads, besides --namespace (empty: every namespace) [TEMCO_HUB_SECRET_NAMESPACES]")
	f.BoolVar(&elect, "leader-elect", true, "elect one working process among those running")
	f.StringVar(&health, "health-addr", env("TEMCO_HUB_HEALTH_ADDR", ""), "address of /healthz and /readyz (empty: none) [TEMCO_HUB_HEALTH_ADDR]")
	return cmd
}
