package cluster

import (
	"bufio"
	"os"
	"os/exec"
	"strconv"
	"testing"
)

// TestPortClaimsAcrossProcesses: a port that another process drew is not
// drawn here while that process holds its claim, and is free again once
// that process ends, however it ends.
func TestPortClaimsAcrossProcesses(t *testing.T) {
	if os.Getenv("ISOSCOPE_HOLD_PORT_CLAIM") != "" {
		return // in the child, which runs TestHoldPortClaim, nothing to do
	}
	port := 20000 + os.Getpid()%10000
	cmd := exec.Command(os.Args[0], "-test.run=^TestHoldPortClaim$", "-test.count=1")
	cmd.Env = append(os.Environ(), "ISOSCOPE_HOLD_PORT_CLAIM="+strconv.Itoa(port))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "claimed\n" {
		_ = cmd.Process.Kill()
		t.Fatalf("the child did not claim port %d: %q, %v", port, line, err)
	}
	if f, ok := claimPort(port); ok {
		if f != nil {
			_ = f.Close()
		}
		t.Errorf("port %d was claimed here while another process holds it", port)
	}
	_ = stdin.Close() // the child exits without releasing anything itself
	_ = cmd.Wait()
	f, ok := claimPort(port)
	if !ok {
		t.Fatalf("port %d is still claimed after its holder ended", port)
	}
	if f == nil {
		t.Skipf("claims cannot be written under %s", portClaims)
	}
	if _, again := claimPort(port); again {
		t.Errorf("port %d was claimed twice", port)
	}
	_ = f.Close()
}

// TestHoldPortClaim is the child of TestPortClaimsAcrossProcesses: it
// claims the port it is given, says so, and holds it until its input
// ends; it does nothing in an ordinary test run.
func TestHoldPortClaim(t *testing.T) {
	p := os.Getenv("ISOSCOPE_HOLD_PORT_CLAIM")
	if p == "" {
		return
	}
	port, _ := strconv.Atoi(p)
	if _, ok := claimPort(port); !ok {
		t.Fatalf("port %d is claimed already", port)
	}
	os.Stdout.WriteString("claimed\n")
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
	os.Exit(0)
}
