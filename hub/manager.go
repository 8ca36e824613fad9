package hub

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/metrics/server"

	temco "github.com/temco/temco/client"
	v1 "github.com/temco/temco/hubapi/v1alpha1"
)

// Config is what `temco hub` runs with.
type Config struct {
	Kube      *rest.Config
	API       *temco.Client // the REST API; an admin's token ("" when it has no authentication)
	Namespace string        // the hub controller's namespace: its lease, cluster-scoped kinds' Secrets
	// SecretNamespaces are the namespaces whose Secrets the hub reads (watches), Namespace
	// always among them; none: every namespace.
	SecretNamespaces []string
	LeaderElect      bool
	HealthAddr       string // "" : none
}

// Run reconciles temco's kinds on the hub until ctx ends. With LeaderElect, one of the
// processes that run it works at a time; the others take over when its lease lapses.
func Run(ctx context.Context, cfg Config) error {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	if err := v1.AddToScheme(scheme); err != nil {
		return err
	}
	lease := 15 * time.Second
	var secrets []string
	var caches cache.Options
	if len(cfg.SecretNamespaces) > 0 {
		// Only what the hub is granted (the chart's Roles): a cluster-wide Secret watch would
		// be refused, and would hold every tenant's Secrets in memory.
		secrets = slices.Compact(slices.Sorted(slices.Values(append([]string{cfg.Namespace}, cfg.SecretNamespaces...))))
		namespaces := map[string]cache.Config{}
		for _, ns := range secrets {
			namespaces[ns] = cache.Config{}
		}
		caches.ByObject = map[client.Object]cache.ByObject{&corev1.Secret{}: {Namespaces: namespaces}}
	}
	mgr, err := ctrl.NewManager(cfg.Kube, ctrl.Options{
		Scheme:                        scheme,
		Cache:                         caches,
		Metrics:                       server.Options{BindAddress: "0"},
		HealthProbeBindAddress:        cfg.HealthAddr,
		LeaderElection:                cfg.LeaderElect,
		LeaderElectionID:              "temco-hub",
		LeaderElectionNamespace:       cfg.Namespace,
		LeaderElectionReleaseOnCancel: true,
		LeaseDuration:                 &lease,
	})
	if err != nil {
		return fmt.Errorf("hub: %w", err)
	}
	r := &Reconciler{Kube: mgr.GetClient(), Fresh: mgr.GetAPIReader(), API: cfg.API, Events: mgr.GetEventRecorder("temco-hub"),
		Namespace: cfg.Namespace, SecretNamespaces: secrets}
	if err := setup(mgr, r); err != nil {
		return err
	}
	if cfg.HealthAddr != "" {
		if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
			return err
		}
		if err := mgr.AddReadyzCheck("ping", healthz.Ping); err != nil {
			return err
		}
	}
	return mgr.Start(ctx)
}
