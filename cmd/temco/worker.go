package main

import (
	"fmt"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/worker"

	"github.com/temco/temco/internal/appctx"
	"github.com/temco/temco/internal/credentials"
	"github.com/temco/temco/workers"
)

// temporalFlags are the Temporal connection settings shared by api and worker.
type temporalFlags struct {
	address, namespace, taskQueue string
}

func (f *temporalFlags) bind(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.address, "temporal-address", env("TEMCO_TEMPORAL_ADDRESS", "127.0.0.1:7233"), "Temporal frontend host:port [TEMCO_TEMPORAL_ADDRESS]")
	cmd.Flags().StringVar(&f.namespace, "temporal-namespace", env("TEMCO_TEMPORAL_NAMESPACE", "default"), "Temporal namespace [TEMCO_TEMPORAL_NAMESPACE]")
	cmd.Flags().StringVar(&f.taskQueue, "task-queue", env("TEMCO_TASK_QUEUE", "temco"), "Temporal task queue [TEMCO_TASK_QUEUE]")
}

func workerCmd() *cobra.Command {
	var sf storeFlags
	var tf temporalFlags
	var perBatch int
	cmd := &cobra.Command{
		Use:   "worker",
		Short: "Run the Temporal worker: lifecycle workflows and their activities",
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			log := newLogger()
			st, keys, closeStore, err := sf.open(ctx)
			if err != nil {
				return err
			}
			defer closeStore()
			contexts, err := appctx.New(ctx, st.Database())
			if err != nil {
				return err
			}
			c, err := tf.dial(ctx, log)
			if err != nil {
				return err
			}
			defer c.Close()
			creds, err := credentials.New(ctx, st.Database(), keys)
			if err != nil {
				return err
			}
			w := workers.New(c, tf.taskQueue, workers.Deps{Store: st, Contexts: contexts, Credentials: creds, Keys: keys,
				ClustersPerBatch: perBatch})
			log.Info("worker polling", "task_queue", tf.taskQueue, "namespace", tf.namespace)
			if err := w.Run(worker.InterruptCh()); err != nil {
				return fmt.Errorf("worker: %w", err)
			}
			return nil
		},
	}
	sf.bind(cmd)
	tf.bind(cmd)
	cmd.Flags().IntVar(&perBatch, "clusters-per-batch", envInt("TEMCO_CLUSTERS_PER_BATCH", 0),
		"clusters per fan-out batch (child workflow); 0 for the default [TEMCO_CLUSTERS_PER_BATCH]")
	return cmd
}
