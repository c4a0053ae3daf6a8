// The interop driver for go-git, a Git implementation in Go, driven by
// refstore's interop suite. It takes the command line of
// interop/clients/driver_args.py:
//
//	clone URL DIR [--depth N]
//	fetch DIR [--depth N | --unshallow]
//	push DIR [--atomic] [--option KEY=VALUE]... REFSPEC...
//	ls-remote URL [--protocol 0|2]
//
// with credentials from INTEROP_USER and INTEROP_PASSWORD (HTTP),
// INTEROP_SSH_KEY and INTEROP_SSH_USER (SSH: go-git does not take the login
// name from the URL) and INTEROP_CA (a PEM certificate to trust).
// Exit 0: done; 1: refused or failed; 3: go-git cannot do it.
package main

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"github.com/go-git/go-git/v5/storage/memory"
	"golang.org/x/crypto/ssh"
)

// unsupported marks what go-git has no API for.
type unsupported string

func (u unsupported) Error() string { return string(u) }

type args struct {
	positional []string
	depth      int
	protocol   int
	unshallow  bool
	atomic     bool
	options    map[string]string
}

func parse(rest []string) args {
	a := args{options: map[string]string{}}
	for i := 0; i < len(rest); i++ {
		switch rest[i] {
		case "--depth", "--protocol", "--option":
			if i+1 >= len(rest) {
				usage()
			}
			value := rest[i+1]
			i++
			switch rest[i-1] {
			case "--depth":
				a.depth = number(value)
			case "--protocol":
				a.protocol = number(value)
			default:
				key, v, _ := strings.Cut(value, "=")
				a.options[key] = v
			}
		case "--unshallow":
			a.unshallow = true
		case "--atomic":
			a.atomic = true
		default:
			a.positional = append(a.positional, rest[i])
		}
	}
	return a
}

func number(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		usage()
	}
	return n
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: go-git-driver clone|fetch|push|ls-remote ... (see main.go)")
	os.Exit(2)
}

// auth gives the credentials of the environment for the transport.
func auth() (transport.AuthMethod, error) {
	if key := os.Getenv("INTEROP_SSH_KEY"); key != "" {
		user := os.Getenv("INTEROP_SSH_USER")
		if user == "" {
			user = "git"
		}
		keys, err := gitssh.NewPublicKeysFromFile(user, key, "")
		if err != nil {
			return nil, err
		}
		// The test servers' host keys are not known in advance.
		keys.HostKeyCallback = ssh.InsecureIgnoreHostKey()
		return keys, nil
	}
	if user := os.Getenv("INTEROP_USER"); user != "" {
		return &http.BasicAuth{Username: user, Password: os.Getenv("INTEROP_PASSWORD")}, nil
	}
	return nil, nil
}

func caBundle() []byte {
	if ca := os.Getenv("INTEROP_CA"); ca != "" {
		pem, err := os.ReadFile(ca)
		if err == nil {
			return pem
		}
	}
	return nil
}

func run(command string, a args) error {
	method, err := auth()
	if err != nil {
		return err
	}
	switch command {
	case "clone":
		if len(a.positional) != 2 {
			usage()
		}
		_, err := git.PlainClone(a.positional[1], false, &git.CloneOptions{
			URL: a.positional[0], Auth: method, Depth: a.depth, CABundle: caBundle(),
		})
		return err
	case "fetch":
		if len(a.positional) != 1 {
			usage()
		}
		if a.unshallow {
			return unsupported("go-git has no unshallow fetch")
		}
		repo, err := git.PlainOpen(a.positional[0])
		if err != nil {
			return err
		}
		err = repo.Fetch(&git.FetchOptions{
			RemoteName: "origin", Auth: method, Depth: a.depth, CABundle: caBundle(),
			RefSpecs: []config.RefSpec{"+refs/heads/*:refs/remotes/origin/*"},
			Tags:     git.AllTags,
		})
		if errors.Is(err, git.NoErrAlreadyUpToDate) {
			return nil
		}
		return err
	case "push":
		if len(a.positional) < 2 {
			usage()
		}
		repo, err := git.PlainOpen(a.positional[0])
		if err != nil {
			return err
		}
		var specs []config.RefSpec
		for _, s := range a.positional[1:] {
			specs = append(specs, config.RefSpec(s))
		}
		err = repo.Push(&git.PushOptions{
			RemoteName: "origin", RefSpecs: specs, Auth: method, CABundle: caBundle(),
			Atomic: a.atomic, Options: a.options,
		})
		if errors.Is(err, git.NoErrAlreadyUpToDate) {
			err = nil
		}
		// go-git reports the first refused ref as its error, not a
		// status per ref.
		if err != nil {
			fmt.Printf("ng * %v\n", err)
			return err
		}
		for _, s := range specs {
			fmt.Printf("ok %s\n", s.Dst(""))
		}
		return nil
	case "ls-remote":
		if len(a.positional) != 1 {
			usage()
		}
		if a.protocol != 0 {
			return unsupported("go-git v5 speaks protocol v0 only")
		}
		remote := git.NewRemote(memory.NewStorage(), &config.RemoteConfig{
			Name: "origin", URLs: []string{a.positional[0]},
		})
		refs, err := remote.List(&git.ListOptions{
			Auth: method, CABundle: caBundle(), PeelingOption: git.AppendPeeled,
		})
		if err != nil {
			return err
		}
		byName := map[plumbing.ReferenceName]plumbing.Hash{}
		for _, ref := range refs {
			byName[ref.Name()] = ref.Hash()
		}
		var lines []string
		for _, ref := range refs {
			hash := ref.Hash()
			// HEAD comes as a symbolic ref: list what it points at.
			if ref.Type() == plumbing.SymbolicReference {
				hash = byName[ref.Target()]
			}
			lines = append(lines, fmt.Sprintf("%s %s", hash, ref.Name()))
		}
		sort.Strings(lines)
		for _, l := range lines {
			fmt.Println(l)
		}
		return nil
	}
	usage()
	return nil
}

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	err := run(os.Args[1], parse(os.Args[2:]))
	var u unsupported
	switch {
	case errors.As(err, &u):
		fmt.Fprintf(os.Stderr, "unsupported: %v\n", err)
		os.Exit(3)
	case err != nil:
		fmt.Fprintf(os.Stderr, "%v\n", err)
		os.Exit(1)
	}
}
