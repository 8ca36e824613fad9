package main

import (
	"context"
	"errors"
	"go.mongodb.org/mongo-driver/v2/event"

	"github.com/spf13/cobra"

	"github.com/temco/temco/internal/adapters/tlsconfig"
	"github.com/temco/temco/internal/core/seal"
	"github.com/temco/temco/internal/core/store"
)

// storeConfig is the MongoDB and encryption settings shared by api and worker.
type storeConfig struct {
	mongoURI, mongoDB, keyFile string
}

func (c *storeConfig) bind(cmd *cobra.Command) {
	cmd.Flags().StringVar(&c.mongoURI, "mongo-uri", env("TEMCO_MONGO_URI", "mongodb://127.0.0.1:27017/"), "MongoDB connection string [TEMCO_MONGO_URI]")
	cmd.Flags().StringVar(&c.mongoDB, "mongo-db", env("TEMCO_MONGO_DB", "temco"), "MongoDB database [TEMCO_MONGO_DB]")
	cmd.Flags().StringVar(&c.keyFile, "key-file", env("TEMCO_KEY_FILE", ""), "encryption key file for secrets at rest [TEMCO_KEY_FILE]")
}

// check refuses a store without keys.
func (c *storeConfig) check() error {
	if c.keyFile == "" {
		return errors.New("--key-file (TEMCO_KEY_FILE) is required: secrets are stored encrypted")
	}
	return nil
}

// open loads the keys and connects to the store; the func returned disconnects.
func (c *storeConfig) open(ctx context.Context, monitor *event.CommandMonitor) (*store.Store, *seal.Keyring, func(), error) {
	keys, err := seal.LoadKeyFile(c.keyFile)
	if err != nil {
		return nil, nil, nil, err
	}
	st, client, err := store.Open(ctx, c.mongoURI, c.mongoDB, monitor)
	if err != nil {
		return nil, nil, nil, err
	}
	return st, keys, func() { _ = client.Disconnect(context.Background()) }, nil
}

// temporalConfig is the Temporal connection settings shared by api and worker.
type temporalConfig struct {
	address, namespace, taskQueue string
	tls                           tlsconfig.Client
	encryptPayloads               bool
}

func (t *temporalConfig) bind(cmd *cobra.Command) {
	cmd.Flags().StringVar(&t.address, "temporal-address", env("TEMCO_TEMPORAL_ADDRESS", "127.0.0.1:7233"), "Temporal frontend host:port [TEMCO_TEMPORAL_ADDRESS]")
	cmd.Flags().StringVar(&t.namespace, "temporal-namespace", env("TEMCO_TEMPORAL_NAMESPACE", "default"), "Temporal namespace [TEMCO_TEMPORAL_NAMESPACE]")
	cmd.Flags().StringVar(&t.taskQueue, "task-queue", env("TEMCO_TASK_QUEUE", "temco"), "Temporal task queue [TEMCO_TASK_QUEUE]")
	cmd.Flags().BoolVar(&t.tls.Enabled, "temporal-tls", env("TEMCO_TEMPORAL_TLS", "") == "true",
		"connect to Temporal over TLS (implied by any --temporal-tls-* file) [TEMCO_TEMPORAL_TLS]")
	cmd.Flags().StringVar(&t.tls.CA, "temporal-tls-ca", env("TEMCO_TEMPORAL_TLS_CA", ""), "PEM CA verifying the Temporal frontend, instead of the system roots [TEMCO_TEMPORAL_TLS_CA]")
	cmd.Flags().StringVar(&t.tls.Cert, "temporal-tls-cert", env("TEMCO_TEMPORAL_TLS_CERT", ""), "client certificate for mutual TLS [TEMCO_TEMPORAL_TLS_CERT]")
	cmd.Flags().StringVar(&t.tls.Key, "temporal-tls-key", env("TEMCO_TEMPORAL_TLS_KEY", ""), "client key for mutual TLS [TEMCO_TEMPORAL_TLS_KEY]")
	cmd.Flags().StringVar(&t.tls.ServerName, "temporal-tls-server-name", env("TEMCO_TEMPORAL_TLS_SERVER_NAME", ""),
		"name expected in the frontend's certificate, when not the dialled host [TEMCO_TEMPORAL_TLS_SERVER_NAME]")
	cmd.Flags().BoolVar(&t.encryptPayloads, "encrypt-payloads", env("TEMCO_ENCRYPT_PAYLOADS", "true") != "false",
		"encrypt Temporal payloads and failures with the --key-file keys; api and worker must agree [TEMCO_ENCRYPT_PAYLOADS]")
}
