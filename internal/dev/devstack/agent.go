package devstack

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The stack's agent cluster is known to temco as agentProvider+agentClusterName
// (docs/agent.md): registered without a kubeconfig, reached only by its temco agent.
const (
	agentProvider    = "agents"
	agentClusterName = "edge1"
	agentPoll        = "2s" // the agent asks for work this often (temco says 10 s)
)

// agentStatus is what GET .../clusters/{c}/agent answers, as far as the stack reads it.
type agentStatus struct {
	State    string     `json:"state"`
	LastSeen *time.Time `json:"lastSeen"`
}

// configureAgent adds the agent cluster after the plain clusters and the GitOps one, in
// the next range of ten ports.
func (s *Stack) configureAgent() {
	index := s.cfg.Clusters
	if s.GitOps != nil {
		index++
	}
	name := "cluster" + strconv.Itoa(index+1)
	s.AgentCluster = &Cluster{Name: name, BinDir: s.cfg.BinDir, Dir: filepath.Join(s.cfg.DataDir, "clusters", name),
		BasePort: s.cfg.ClusterBasePort + 10*index}
}

// AgentClusterID is the agent cluster's id in temco: <provider>+<cluster>.
func AgentClusterID() string { return agentProvider + "+" + agentClusterName }

// agentCredentialFile is where temco agent keeps the credential it joined with: a later
// start of the stack finds it and needs no join token.
func (s *Stack) agentCredentialFile() string {
	return filepath.Join(s.cfg.DataDir, "agent", "credential")
}

func (s *Stack) agentLog() string { return filepath.Join(s.cfg.DataDir, "logs", "agent.log") }

func (s *Stack) apiURL() string { return "http://127.0.0.1:" + strconv.Itoa(s.cfg.APIPort) }

func (s *Stack) agentClusterURL() string {
	return s.apiURL() + "/v2/cluster-providers/" + agentProvider + "/clusters/" + agentClusterName
}

// startAgent registers the agent cluster (a later start finds it registered) and starts
// temco agent, joining with a new token when it holds no credential temco still takes.
func (s *Stack) startAgent(ctx context.Context) error {
	if err := s.registerAgentCluster(ctx); err != nil {
		return fmt.Errorf("register the agent cluster %s: %w", AgentClusterID(), err)
	}
	token, err := s.agentJoinToken(ctx)
	if err != nil {
		return fmt.Errorf("agent cluster %s: %w", AgentClusterID(), err)
	}
	return s.runAgent(ctx, token)
}

// StartAgent (re)starts temco agent with the credential it kept, and waits until it calls.
func (s *Stack) StartAgent(ctx context.Context) error { return s.runAgent(ctx, "") }

// registerAgentCluster creates the provider and the cluster with spec.access "agent";
// 409, left by an earlier start on the same data, is as good.
func (s *Stack) registerAgentCluster(ctx context.Context) error {
	provider, err := json.Marshal(map[string]any{"metadata": map[string]string{"name": agentProvider}})
	if err != nil {
		return err
	}
	if _, err := apiCall(ctx, http.MethodPost, s.apiURL()+"/v2/cluster-providers", "application/json",
		provider, http.StatusCreated, http.StatusConflict); err != nil {
		return err
	}
	body, contentType, err := agentClusterForm()
	if err != nil {
		return err
	}
	_, err = apiCall(ctx, http.MethodPost, s.apiURL()+"/v2/cluster-providers/"+agentProvider+"/clusters", contentType,
		body, http.StatusCreated, http.StatusConflict)
	return err
}

// agentClusterForm is the registration as the clusters route takes it: multipart, with
// the metadata part alone (the kubeconfig, a file part, stays in the cluster).
func agentClusterForm() ([]byte, string, error) {
	meta, err := json.Marshal(map[string]any{"metadata": map[string]string{"name": agentClusterName},
		"spec": map[string]string{"access": "agent"}})
	if err != nil {
		return nil, "", err
	}
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	if err := w.WriteField("metadata", string(meta)); err != nil {
		return nil, "", err
	}
	if err := w.Close(); err != nil {
		return nil, "", err
	}
	return buf.Bytes(), w.FormDataContentType(), nil
}

// agentJoinToken is "" when the kept credential will do: the file holds one and temco
// says the agent joined (offline after a pause of the stack). Otherwise (the first start, temco's data deleted without the
// credential's, or the agent revoked) the credential is dropped and a new join token issued.
func (s *Stack) agentJoinToken(ctx context.Context) (string, error) {
	st, err := s.agentStatus(ctx)
	if err != nil {
		return "", err
	}
	file := s.agentCredentialFile()
	joined := st.State == "joined" || st.State == "offline" // offline: joined, and not calling while the stack was down
	if b, err := os.ReadFile(file); err == nil && strings.TrimSpace(string(b)) != "" && joined {
		return "", nil
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	if err := os.Remove(file); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	answer, err := apiCall(ctx, http.MethodPost, s.agentClusterURL()+"/agent-token", "application/json", nil, http.StatusCreated)
	if err != nil {
		return "", err
	}
	var tok struct{ Token string }
	if err := json.Unmarshal(answer, &tok); err != nil || tok.Token == "" {
		return "", fmt.Errorf("join token answer %.200q: %v", answer, err)
	}
	return tok.Token, nil
}

// runAgent starts temco agent as it would run in a pod of its cluster: that cluster's
// kubeconfig and temco's address, none of temco's own settings (its store, its key).
// It is ready once temco has seen it call since it started.
func (s *Stack) runAgent(ctx context.Context, token string) error {
	args := []string{"agent", "--api", s.apiURL(), "--credential-file", s.agentCredentialFile(),
		"--kubeconfig", s.AgentCluster.Kubeconfig(), "--poll", agentPoll}
	env := s.tracesEnv()
	if token != "" { // from the environment: a flag would show it in ps
		env = append(env, "TEMCO_AGENT_JOIN_TOKEN="+token)
	}
	// The api stores lastSeen to the millisecond.
	started := time.Now().Truncate(time.Millisecond)
	p, err := StartProc("temco agent", s.agentLog(), s.cfg.Self, args, env)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.AgentProc = p
	s.mu.Unlock()
	return WaitReady(ctx, p, 60*time.Second, func(ctx context.Context) error { return s.agentCalledSince(ctx, started) })
}

// agentCalledSince succeeds once temco says the agent joined and last called at since or
// later: a lastSeen left by an earlier run says nothing of this one. The api writes it at
// most every 30 s per agent, so an agent restarted while the api runs may wait that long.
func (s *Stack) agentCalledSince(ctx context.Context, since time.Time) error {
	st, err := s.agentStatus(ctx)
	if err != nil {
		return err
	}
	if st.State != "joined" || st.LastSeen == nil || st.LastSeen.Before(since) {
		return fmt.Errorf("agent %s: state %q, last call %v: %w", AgentClusterID(), st.State, st.LastSeen, errNotReady)
	}
	return nil
}

func (s *Stack) agentStatus(ctx context.Context) (agentStatus, error) {
	var st agentStatus
	answer, err := apiCall(ctx, http.MethodGet, s.agentClusterURL()+"/agent", "", nil, http.StatusOK)
	if err != nil {
		return st, err
	}
	if err := json.Unmarshal(answer, &st); err != nil {
		return st, fmt.Errorf("agent state %.200q: %w", answer, err)
	}
	return st, nil
}

// apiCall sends body to temco's api and returns the answer's body; a status not among
// codes is an error quoting the answer.
func apiCall(ctx context.Context, method, url, contentType string, body []byte, codes ...int) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, err
	}
	if !slices.Contains(codes, resp.StatusCode) {
		return nil, fmt.Errorf("%s %s: %s %.300s", method, url, resp.Status, answer)
	}
	return answer, nil
}

// agentSummary says where the agent cluster is and how temco reaches it.
func (s *Stack) agentSummary(w io.Writer) {
	c := s.AgentCluster
	fmt.Fprintf(w, "  agent cluster     %s (%s, https://127.0.0.1:%d), reached only by temco agent; log %s\n",
		AgentClusterID(), c.Name, c.APIPort(), s.agentLog())
	fmt.Fprintf(w, "                    kubeconfig %s (the agent's; temco holds none)\n", c.Kubeconfig())
}
