package store

import (
	"bufio"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
)

func TestLockedInProcess(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, &Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	_, err = Open(dir, &Options{Logger: quietLogger()})
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), dir) {
		t.Fatalf("second open: %v; want ErrLocked naming %s", err, dir)
	}
	t.Log(err)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(dir, &Options{Logger: quietLogger()})
	if err != nil {
		t.Fatalf("open after close: %v", err)
	}
	s.Close()
}

const holdLockEnv = "CUZK_STORE_TEST_HOLD_LOCK"

// TestLockHolder is the child process of TestLockedByAnotherProcess: it
// holds the store named by the environment until its stdin closes.
func TestLockHolder(t *testing.T) {
	dir := os.Getenv(holdLockEnv)
	if dir == "" {
		t.Skip("run by TestLockedByAnotherProcess")
	}
	s, err := Open(dir, &Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.CreateJob(Job{ID: "held", NumPartitions: 1}); err != nil {
		t.Fatal(err)
	}
	os.Stdout.WriteString("held\n")
	io.Copy(io.Discard, os.Stdin)
}

func TestLockedByAnotherProcess(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestLockHolder$", "-test.count=1")
	cmd.Env = append(os.Environ(), holdLockEnv+"="+dir)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	// Test output (=== RUN with -v) may come before the child's word.
	r := bufio.NewReader(stdout)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("child exited before holding the store: %v", err)
		}
		if line == "held\n" {
			break
		}
	}

	_, err = Open(dir, &Options{Logger: quietLogger()})
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), dir) {
		t.Fatalf("open of a store another process holds: %v; want ErrLocked naming %s", err, dir)
	}
	t.Log(err)
	_, err = Open(dir, &Options{ReadOnly: true, Logger: quietLogger()})
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("read-only open of a store another process holds: %v; want ErrLocked", err)
	}

	stdin.Close()
	go io.Copy(io.Discard, r)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v", err)
	}
	s, err := Open(dir, &Options{Logger: quietLogger()})
	if err != nil {
		t.Fatalf("open once the other process is gone: %v", err)
	}
	defer s.Close()
	if _, err := s.Job("held"); err != nil {
		t.Fatalf("the other process's job: %v", err)
	}
}
