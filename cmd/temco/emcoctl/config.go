package emcoctl

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// APIFromConfig returns the API base URL an emcoctl config file (--config) points at.
// temco serves every EMCO service from one API, so only two of emcoctl's entries
// matter: the ingress when it has both a host and a port, else the orchestrator.
// Keys match in any case, and a port may be a string, as emcoctl reads them.
func APIFromConfig(file string) (string, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return "", err
	}
	var cfg map[string]any
	if err := yaml.Unmarshal(data, &cfg); err != nil {
		return "", fmt.Errorf("emcoctl config %s: %w", file, err)
	}
	for _, service := range []string{"ingress", "orchestrator"} {
		entry, _ := lookup(cfg, service).(map[string]any)
		host, _ := lookup(entry, "host").(string)
		port, _ := strconv.Atoi(fmt.Sprint(lookup(entry, "port")))
		if host != "" && port > 0 {
			return "http://" + net.JoinHostPort(host, strconv.Itoa(port)), nil
		}
	}
	return "", fmt.Errorf("emcoctl config %s: neither ingress nor orchestrator has a host and a port", file)
}

// lookup finds key in m regardless of case.
func lookup(m map[string]any, key string) any {
	for k, v := range m {
		if strings.EqualFold(k, key) {
			return v
		}
	}
	return nil
}
