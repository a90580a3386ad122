package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// stageDirPattern names the temporary folder a run writes into before it
// swaps the result in; the leading dot keeps the go command (./...) away
// from a folder left behind by a killed run.
const stageDirPattern = ".mcpgen-stage-*"

// swap is one output folder of a run: the folder written in the stage, the
// folder it replaces, and where swapIn moved that one ("" when there was none).
type swap struct{ staged, target, old string }

// writeAll writes a run's whole output or nothing: mcpgen's files and each
// oapi-codegen configuration's folder are written in a stage beside out and
// swapped in together (swapIn); oapiCmd runs from the stage, so a relative
// output path lands there.
func writeAll(out string, files map[string][]byte, oapiConfigs []string, spec string, oapiCmd []string) (err error) {
	parent := filepath.Dir(filepath.Clean(out))
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return err
	}
	stage, err := os.MkdirTemp(parent, stageDirPattern)
	if err != nil {
		return err
	}
	defer func() {
		if rerr := os.RemoveAll(stage); err == nil && rerr != nil {
			err = rerr
		}
	}()
	var swaps []swap
	absSpec, err := filepath.Abs(spec)
	if err != nil {
		return err
	}
	for _, cfg := range oapiConfigs {
		s, err := stageOAPI(stage, cfg, absSpec, oapiCmd)
		if err != nil {
			return err
		}
		swaps = append(swaps, s)
	}
	mine := filepath.Join(stage, "mcpgen")
	if err := writeFiles(mine, files); err != nil {
		return err
	}
	swaps = append(swaps, swap{staged: mine, target: out})
	return swapIn(swaps, filepath.Join(stage, "old"))
}

// stageOAPI runs oapi-codegen with one configuration from the stage and
// completes the folder it wrote with the other files of the folder it will
// replace (a hand-written doc.go, say).
func stageOAPI(stage, cfg, absSpec string, oapiCmd []string) (swap, error) {
	output, err := oapiOutput(cfg)
	if err != nil {
		return swap{}, err
	}
	absCfg, err := filepath.Abs(cfg)
	if err != nil {
		return swap{}, err
	}
	args := append(append([]string{}, oapiCmd[1:]...), "-config", absCfg, absSpec)
	cmd := exec.Command(oapiCmd[0], args...)
	cmd.Dir = stage
	if out, err := cmd.CombinedOutput(); err != nil {
		return swap{}, fmt.Errorf("oapi-codegen -config %s: %v\n%s", cfg, err, out)
	}
	target := filepath.Dir(output)
	staged := filepath.Join(stage, target)
	if _, err := os.Stat(filepath.Join(stage, output)); err != nil {
		return swap{}, fmt.Errorf("oapi-codegen -config %s wrote no %s", cfg, output)
	}
	entries, err := os.ReadDir(target)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return swap{}, err
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		if _, err := os.Stat(filepath.Join(staged, e.Name())); err == nil {
			continue // written by oapi-codegen
		}
		if err := copyFile(filepath.Join(target, e.Name()), filepath.Join(staged, e.Name())); err != nil {
			return swap{}, err
		}
	}
	return swap{staged: staged, target: target}, nil
}

// oapiOutput reads the output file an oapi-codegen configuration names: a
// relative path that stays below the folder generation runs in.
func oapiOutput(cfg string) (string, error) {
	data, err := os.ReadFile(cfg)
	if err != nil {
		return "", err
	}
	var c struct {
		Output string `yaml:"output"`
	}
	if err := yaml.Unmarshal(data, &c); err != nil {
		return "", yamlError(displayPath(cfg), data, err)
	}
	out := filepath.Clean(filepath.FromSlash(c.Output))
	if c.Output == "" || filepath.IsAbs(out) || out == "." || strings.HasPrefix(out, "..") || filepath.Dir(out) == "." {
		return "", fmt.Errorf("%s: output %q must be a file in a folder below the repository root (e.g. gen/rsclient/rsclient.gen.go), which mcpgen writes whole or not at all", displayPath(cfg), c.Output)
	}
	return out, nil
}

// swapIn replaces each target folder with its staged folder, moving the old
// one into trash; when a rename fails, the swaps already made are undone,
// so every target is either all new or all old.
func swapIn(swaps []swap, trash string) error {
	if err := os.MkdirAll(trash, 0o755); err != nil {
		return err
	}
	undo := func(made []swap) error {
		var errs []error
		for _, d := range slices.Backward(made) {
			errs = append(errs, os.Rename(d.target, d.staged))
			if d.old != "" {
				errs = append(errs, os.Rename(d.old, d.target))
			}
		}
		return errors.Join(errs...)
	}
	for i := range swaps {
		s := &swaps[i]
		if _, err := os.Stat(s.target); err == nil {
			s.old = filepath.Join(trash, strconv.Itoa(i))
			if err := os.Rename(s.target, s.old); err != nil {
				return errors.Join(fmt.Errorf("move %s aside: %w", s.target, err), undo(swaps[:i]))
			}
		}
		if err := os.Rename(s.staged, s.target); err != nil {
			if s.old != "" {
				err = errors.Join(err, os.Rename(s.old, s.target))
			}
			return errors.Join(fmt.Errorf("swap in %s: %w", s.target, err), undo(swaps[:i]))
		}
	}
	return nil
}

// copyFile copies one file, keeping its permission bits.
func copyFile(from, to string) error {
	data, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	st, err := os.Stat(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, data, st.Mode().Perm())
}
