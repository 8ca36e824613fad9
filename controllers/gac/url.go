package gac

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/temco/temco/internal/core/model"
)

// A JSON patch value "$(URL)$" stands for the value the URL answers, as in EMCO: a
// string starting "$(http" and ending ")$" (other strings are values as they are). The
// URL's {clusterProvider} and {cluster} are the customization's clusterInfo, not the
// cluster being patched, as in EMCO (whose examples name clm's kv-pairs route, so one
// value per customization).
const (
	urlPrefix = "$(http"
	urlSuffix = ")$"

	placeholderProvider = "{clusterProvider}"
	placeholderCluster  = "{cluster}"
)

// urlOf returns the URL of a $(URL)$ value.
func urlOf(v any) (string, bool) {
	s, ok := v.(string)
	if !ok || !strings.HasPrefix(s, urlPrefix) || !strings.HasSuffix(s, urlSuffix) {
		return "", false
	}
	return s[len("$(") : len(s)-len(urlSuffix)], true
}

// lookup is where a $(URL)$ value comes from: a cluster's kv-pair, read from temco's
// store, or the URL itself, fetched.
type lookup struct {
	URL *url.URL // userinfo, if any, is never written into a message: see host
	KV  *kvKey   // set when the URL names the kv-pairs route
}

// kvKey is one key of a cluster's kv-pairs resource.
type kvKey struct{ Provider, Cluster, KVPair, Key string }

func (k kvKey) id() string {
	return "/cluster-providers/" + k.Provider + "/clusters/" + k.Cluster + "/kv-pairs/" + k.KVPair
}

// host is the URL's host and port, without userinfo: what messages name.
func (l lookup) host() string { return l.URL.Host }

// parseLookup reads a $(URL)$ value's URL for a customization of the cluster(s) ci names.
// Messages never quote the URL, which may carry credentials.
func parseLookup(raw string, ci ClusterInfo) (lookup, error) {
	if strings.Contains(raw, placeholderCluster) && ci.Cluster == "" {
		return lookup{}, errors.New("uses {cluster} but spec.clusterInfo.cluster is empty")
	}
	raw = strings.ReplaceAll(raw, placeholderProvider, ci.ClusterProvider)
	raw = strings.ReplaceAll(raw, placeholderCluster, ci.Cluster)
	u, err := url.Parse(raw)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // without the URL
		}
		return lookup{}, fmt.Errorf("does not parse: %v", err)
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return lookup{}, fmt.Errorf("has scheme %q, not http or https", u.Scheme)
	case u.Hostname() == "":
		return lookup{}, errors.New("has no host")
	}
	l := lookup{URL: u}
	k, ok, err := kvRoute(u)
	if err != nil {
		return lookup{}, fmt.Errorf("(host %s) %v", l.host(), err)
	}
	if ok {
		l.KV = &k
	}
	return l, nil
}

// kvRoute reads a URL whose path is the kv-pairs route of temco's API and EMCO's clm,
// /v2/cluster-providers/{p}/clusters/{c}/kv-pairs/{kv}?key=K, whatever its host: that
// value is read from temco's store. Without ?key= the route answers the whole kv-pairs
// resource, which has no value to use.
func kvRoute(u *url.URL) (kvKey, bool, error) {
	s := strings.Split(u.Path, "/")
	if len(s) != 8 || s[0] != "" || s[1] != "v2" || s[2] != "cluster-providers" || s[4] != "clusters" || s[6] != "kv-pairs" {
		return kvKey{}, false, nil
	}
	k := kvKey{Provider: s[3], Cluster: s[5], KVPair: s[7], Key: u.Query().Get("key")}
	for _, n := range []struct{ what, name string }{{"cluster provider", k.Provider}, {"cluster", k.Cluster}, {"kv-pairs name", k.KVPair}} {
		if err := model.ValidateName(n.what+" in the kv-pairs path", n.name); err != nil {
			return kvKey{}, true, fmt.Errorf("names the kv-pairs route, but %v", err)
		}
	}
	if k.Key == "" {
		return kvKey{}, true, fmt.Errorf("names kv-pairs %q of cluster %s+%s without ?key=, which answers no value", k.KVPair, k.Provider, k.Cluster)
	}
	return k, true, nil
}

// lookupsOf checks a customization's $(URL)$ values: one lookup per operation index that
// has one.
func lookupsOf(sp CustomizationSpec) (map[int]lookup, error) {
	out := map[int]lookup{}
	for i, op := range sp.PatchJSON {
		raw, ok := urlOf(op["value"])
		if !ok {
			continue
		}
		l, err := parseLookup(raw, sp.ClusterInfo)
		if err != nil {
			return nil, fmt.Errorf("patchJson[%d].value is a $(URL)$ whose URL %v", i, err)
		}
		out[i] = l
	}
	return out, nil
}
