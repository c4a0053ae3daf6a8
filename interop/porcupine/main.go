// Command porcupine-check checks that a history of operations on refs is
// linearizable, with Porcupine's checker, each ref being a register that
// clients read and compare-and-swap.
//
// Usage: porcupine-check <history.json>
//
//	porcupine-check -batch
//
// The history is a JSON array of operations:
//
//	{"client": 3, "ref": "refs/heads/k1", "kind": "cas", "old": "<id>",
//	 "new": "<id>", "call": 120, "return": 180, "result": "ok"}
//	{"client": 1, "ref": "refs/heads/k1", "kind": "read", "value": "<id>",
//	 "call": 130, "return": 140, "result": "ok"}
//
// Times are nanoseconds on one clock. An empty id is an absent ref. A
// compare-and-swap's result is "ok" (applied), "failed" (not applied: the
// ref held something else), "refused" (not applied, for a reason that
// says nothing of the ref's value: a lock held by another writer) or
// "unknown" (no answer: it may have been applied at any time after its
// call, or never); reads with no answer are left out of the history by the
// caller.
//
// Exit status 0: linearizable; 1: not linearizable; 2: bad input or the
// check timed out.
//
// With -batch, histories come on standard input, one JSON object per line,
// {"id": "<name>", "ops": [<operations as above>]}, and for each the
// checker answers one line on standard output, in order: "ok <id>",
// "illegal <id>" or "timeout <id>". It exits 0 once the input ends, 2 on
// bad input.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/anishathalye/porcupine"
)

type record struct {
	Client int    `json:"client"`
	Ref    string `json:"ref"`
	Kind   string `json:"kind"`
	Old    string `json:"old"`
	New    string `json:"new"`
	Value  string `json:"value"`
	Call   int64  `json:"call"`
	Return int64  `json:"return"`
	Result string `json:"result"`
}

type input struct {
	ref  string
	kind string
	old  string
	new  string
}

type output struct {
	result string
	value  string
}

// A register per ref: reads see its value; a compare-and-swap that was
// applied found the old value; one that failed found another; one whose
// outcome is unknown either was applied (if it could be) or not.
var model = porcupine.NondeterministicModel{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		byRef := map[string][]porcupine.Operation{}
		var order []string
		for _, op := range history {
			ref := op.Input.(input).ref
			if _, seen := byRef[ref]; !seen {
				order = append(order, ref)
			}
			byRef[ref] = append(byRef[ref], op)
		}
		var parts [][]porcupine.Operation
		for _, ref := range order {
			parts = append(parts, byRef[ref])
		}
		return parts
	},
	Init: func() []interface{} { return []interface{}{""} },
	Step: func(state, in, out interface{}) []interface{} {
		value := state.(string)
		i := in.(input)
		o := out.(output)
		switch i.kind {
		case "read":
			if o.value == value {
				return []interface{}{value}
			}
			return nil
		case "cas":
			switch o.result {
			case "ok":
				if value == i.old {
					return []interface{}{i.new}
				}
				return nil
			case "failed":
				if value != i.old {
					return []interface{}{value}
				}
				return nil
			case "refused":
				return []interface{}{value}
			default:
				if value == i.old {
					return []interface{}{value, i.new}
				}
				return []interface{}{value}
			}
		}
		return nil
	},
	DescribeOperation: func(in, out interface{}) string {
		i := in.(input)
		o := out.(output)
		if i.kind == "read" {
			return fmt.Sprintf("read(%s) -> %.8s", i.ref, o.value)
		}
		return fmt.Sprintf("cas(%s, %.8s, %.8s) -> %s", i.ref, i.old, i.new, o.result)
	},
}

// operations turns records into Porcupine's operations; an error names a
// record it cannot read.
func operations(records []record) ([]porcupine.Operation, error) {
	var end int64
	for _, r := range records {
		if r.Return > end {
			end = r.Return
		}
	}
	history := make([]porcupine.Operation, 0, len(records))
	for _, r := range records {
		if r.Kind != "read" && r.Kind != "cas" {
			return nil, fmt.Errorf("unknown operation kind %q", r.Kind)
		}
		ret := r.Return
		// An operation without an answer may take effect at any time
		// after its call.
		if r.Result == "unknown" {
			ret = end + 1
		}
		history = append(history, porcupine.Operation{
			ClientId: r.Client,
			Input:    input{ref: r.Ref, kind: r.Kind, old: r.Old, new: r.New},
			Call:     r.Call,
			Output:   output{result: r.Result, value: r.Value},
			Return:   ret,
		})
	}
	return history, nil
}

type batchItem struct {
	ID  string   `json:"id"`
	Ops []record `json:"ops"`
}

// batch checks one history per input line, answering one line each.
func batch() {
	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	for {
		line, err := in.ReadBytes('\n')
		if len(line) > 0 {
			var item batchItem
			if jerr := json.Unmarshal(line, &item); jerr != nil {
				fmt.Fprintf(os.Stderr, "bad history line: %v\n", jerr)
				out.Flush()
				os.Exit(2)
			}
			history, herr := operations(item.Ops)
			if herr != nil {
				fmt.Fprintf(os.Stderr, "history %s: %v\n", item.ID, herr)
				out.Flush()
				os.Exit(2)
			}
			switch porcupine.CheckOperationsTimeout(model.ToModel(), history, 60*time.Second) {
			case porcupine.Ok:
				fmt.Fprintf(out, "ok %s\n", item.ID)
			case porcupine.Illegal:
				fmt.Fprintf(out, "illegal %s\n", item.ID)
			default:
				fmt.Fprintf(out, "timeout %s\n", item.ID)
			}
			// The caller may wait for each answer before sending more.
			out.Flush()
		}
		if err != nil {
			return
		}
	}
}

func main() {
	if len(os.Args) == 2 && os.Args[1] == "-batch" {
		batch()
		return
	}
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: porcupine-check <history.json> | -batch")
		os.Exit(2)
	}
	data, err := os.ReadFile(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	var records []record
	if err := json.Unmarshal(data, &records); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", os.Args[1], err)
		os.Exit(2)
	}
	history, err := operations(records)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	result, info := porcupine.CheckOperationsVerbose(model.ToModel(), history, 60*time.Second)
	switch result {
	case porcupine.Ok:
		fmt.Printf("linearizable: %d operations\n", len(history))
	case porcupine.Illegal:
		fmt.Printf("NOT linearizable: %d operations\n", len(history))
		if out, err := os.Create(os.Args[1] + ".html"); err == nil {
			_ = porcupine.Visualize(model.ToModel(), info, out)
			out.Close()
			fmt.Printf("see %s.html\n", os.Args[1])
		}
		os.Exit(1)
	default:
		fmt.Println("the check timed out")
		os.Exit(2)
	}
}
