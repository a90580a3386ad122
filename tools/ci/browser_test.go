package main

import (
	"errors"
	"strings"
	"testing"
)

func TestBrowserNotRun(t *testing.T) {
	missing := func(string) (string, error) { return "", errors.New("not found") }
	for _, tc := range []struct {
		name    string
		found   string
		wantMsg bool
	}{
		{"none installed", "", true},
		{"debian chromium", "chromium", false},
		{"chrome", "google-chrome", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			look := missing
			if tc.found != "" {
				look = func(name string) (string, error) {
					if name == tc.found {
						return name, nil
					}
					return missing(name)
				}
			}
			msg := browserNotRun(look)
			if got := msg != ""; got != tc.wantMsg {
				t.Fatalf("message %q, want one: %v", msg, tc.wantMsg)
			}
			if tc.wantMsg && (!strings.Contains(msg, "NOT RUN") || !strings.Contains(msg, "apt-get install chromium")) {
				t.Errorf("message %q does not say what did not run and how to fix it", msg)
			}
		})
	}
}
