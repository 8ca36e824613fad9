package main

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/temco/temco/internal/adapters/gitops"
	"github.com/temco/temco/internal/adapters/gitops/monitor"
)

// monitorCmd runs beside a GitOps cluster. It reads the environment EMCO's monitor reads,
// so that an EMCO monitor deployment runs it unchanged.
func monitorCmd() *cobra.Command {
	var gitURL, gitUser, gitBranch, gitRepo, clusterID, kubeconfig string
	interval, intervalErr := 30*time.Second, error(nil)
	if v := os.Getenv("TEMCO_MONITOR_INTERVAL"); v != "" {
		interval, intervalErr = time.ParseDuration(v)
	}
	cmd := &cobra.Command{
		Use:   "gitops-monitor",
		Short: "Report the status of a GitOps cluster's Flux Kustomizations to its status branch",
		Long: `Runs beside a cluster temco reaches only through git. Every interval it reads the
cluster's Flux Kustomizations (kustomize.toolkit.fluxcd.io/v1) and the objects of their
inventories, and commits their status to branch <provider>+<cluster> of the repository,
one file per Kustomization under clusters/<provider>+<cluster>/status/; temco's workers
read it there. The token is read from GIT_TOKEN only, never from a flag.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if intervalErr != nil && !cmd.Flags().Changed("interval") {
				return fmt.Errorf("TEMCO_MONITOR_INTERVAL: %w", intervalErr)
			}
			if gitURL == "" || clusterID == "" {
				return errors.New("GIT_URL (--git-url) and GIT_CLUSTERNAME (--cluster) are required")
			}
			kube, err := kubeConfig(kubeconfig)
			if err != nil {
				return err
			}
			cache, err := os.MkdirTemp("", "temco-gitops-monitor-")
			if err != nil {
				return err
			}
			defer os.RemoveAll(cache)
			m := &monitor.Monitor{
				Kube:     kube,
				Git:      &gitops.Writer{Dir: cache, Author: "temco gitops-monitor <gitops-monitor@temco.local>"},
				Remote:   gitops.Remote{URL: gitURL, Branch: gitops.StatusBranch(clusterID), User: gitUser, Token: os.Getenv("GIT_TOKEN")},
				Cluster:  clusterID,
				Interval: interval,
				Log:      newLogger(),
			}
			m.Log.Info("gitops monitor configuration", "cluster", clusterID, "repo", gitRepo, "deploy_branch", gitBranch)
			return m.Run(cmd.Context())
		},
	}
	f := cmd.Flags()
	f.StringVar(&gitURL, "git-url", env("GIT_URL", ""), "http(s) clone URL of the repository the cluster's Flux pulls from [GIT_URL]")
	f.StringVar(&gitUser, "git-username", env("GIT_USERNAME", ""), "user pushing the status, with the token in GIT_TOKEN [GIT_USERNAME]")
	f.StringVar(&gitBranch, "git-branch", env("GIT_BRANCH", ""), "the branch temco deploys to (the status goes to the cluster's own branch) [GIT_BRANCH]")
	f.StringVar(&gitRepo, "git-repo", env("GIT_REPO", ""), "the repository's name, for the logs (GIT_URL locates it) [GIT_REPO]")
	f.StringVar(&clusterID, "cluster", env("GIT_CLUSTERNAME", ""), "the cluster, <provider>+<cluster>: names the status branch and folder [GIT_CLUSTERNAME]")
	f.StringVar(&kubeconfig, "kubeconfig", env("KUBECONFIG", ""), "kubeconfig of the cluster; empty: the in-cluster service account [KUBECONFIG]")
	f.DurationVar(&interval, "interval", interval, "time between two status passes [TEMCO_MONITOR_INTERVAL]")
	return cmd
}

// kubeConfig reads path, or the pod's service account when path is empty.
func kubeConfig(path string) (*rest.Config, error) {
	var cfg *rest.Config
	var err error
	if path == "" {
		cfg, err = rest.InClusterConfig()
	} else {
		cfg, err = clientcmd.BuildConfigFromFlags("", path)
	}
	if err != nil {
		return nil, fmt.Errorf("cluster access: %w", err)
	}
	// A pass reads every inventory object: client-go's default of 5 requests/s would
	// make a pass over a few hundred objects last a minute.
	cfg.QPS, cfg.Burst = 50, 100
	return cfg, nil
}
