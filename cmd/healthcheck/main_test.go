package main

import (
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestRun(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ready")) })
	mux.HandleFunc("/nocontent", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	mux.HandleFunc("/notready", func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "consumer turnguard-p003\nstuck for 12s", http.StatusServiceUnavailable)
	})
	mux.HandleFunc("/empty503", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) })
	mux.HandleFunc("/moved", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/ok", http.StatusFound) })
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	tlsSrv := httptest.NewUnstartedServer(mux)
	tlsSrv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake
	tlsSrv.StartTLS()
	defer tlsSrv.Close()
	closed := httptest.NewServer(mux)
	closedURL := closed.URL
	closed.Close()

	tests := []struct {
		name    string
		args    []string
		want    int
		wantErr string // in stderr; empty: stderr must be empty
	}{
		{"200", []string{srv.URL + "/ok"}, 0, ""},
		{"204", []string{srv.URL + "/nocontent"}, 0, ""},
		{"503 with why", []string{srv.URL + "/notready"}, 1, "503 Service Unavailable: consumer turnguard-p003 stuck for 12s"},
		{"503 without body", []string{srv.URL + "/empty503"}, 1, "503 Service Unavailable"},
		{"404", []string{srv.URL + "/nothing"}, 1, "404 Not Found"},
		{"redirect not followed", []string{srv.URL + "/moved"}, 1, "302 Found"},
		{"timeout", []string{srv.URL + "/slow"}, 1, "no answer within"},
		{"refused", []string{closedURL + "/ok"}, 1, "connection refused"},
		// The test server's certificate is not in the system pool.
		{"https unverified", []string{tlsSrv.URL + "/ok"}, 1, "certificate"},
		{"file scheme", []string{"file:///etc/passwd"}, 1, "want an http or https URL"},
		{"no scheme", []string{"127.0.0.1/readyz"}, 1, "want an http or https URL"},
		{"no host", []string{"http:///readyz"}, 1, "no host"},
		{"no argument", nil, 1, "usage: healthcheck URL"},
		{"two arguments", []string{srv.URL + "/ok", srv.URL + "/ok"}, 1, "usage: healthcheck URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stderr strings.Builder
			// Only the timeout case waits for its timeout; the others get
			// a generous one, as a TLS handshake under -race on a busy
			// machine can take more than 300 ms.
			timeout := 10 * time.Second
			if tt.name == "timeout" {
				timeout = 300 * time.Millisecond
			}
			got := run(tt.args, io.Discard, &stderr, timeout)
			if got != tt.want {
				t.Errorf("exit code %d, want %d (stderr %q)", got, tt.want, stderr.String())
			}
			if tt.wantErr == "" {
				if stderr.Len() != 0 {
					t.Errorf("stderr %q, want empty", stderr.String())
				}
				return
			}
			if !strings.Contains(stderr.String(), tt.wantErr) {
				t.Errorf("stderr %q, want it to contain %q", stderr.String(), tt.wantErr)
			}
			if n := strings.Count(stderr.String(), "\n"); n != 1 {
				t.Errorf("stderr has %d lines, want 1: %q", n, stderr.String())
			}
		})
	}
}
