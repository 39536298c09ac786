package cluster

import (
	"errors"
	"testing"
)

func TestLoadNoCluster(t *testing.T) {
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	t.Setenv("KUBECONFIG", "/nonexistent/must-not-be-read")
	if _, err := Load(""); !errors.Is(err, ErrNoCluster) {
		t.Fatalf("got %v, want ErrNoCluster", err)
	}
	if _, err := Load("/nonexistent/kubeconfig"); err == nil {
		t.Fatal("a missing kubeconfig file is no error")
	}
}
