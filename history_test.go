package dbpilot_test

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
)

// shapeBase is an instance with every kind of part set: a channel, Galera
// state, replicas.
func shapeBase() *dbpilot.Instance {
	lag := int64(3)
	return &dbpilot.Instance{
		Key: dbpilot.InstanceKey{Host: "127.0.0.1", Port: 3307}, Reachable: true, ObservedAt: time.Unix(100, 0),
		Flavor: dbpilot.FlavorMariaDB, Version: dbpilot.Version{Major: 10, Minor: 11, Patch: 6, Raw: "10.11.6-MariaDB"},
		ServerID: 2, Hostname: "db", Port: 3307, ReadOnly: true, LogBin: true, LogReplicaUpdates: true,
		GTID:     dbpilot.GTIDState{Mode: "ON", BinlogPos: "0-1-5"},
		Channels: []dbpilot.ReplicationChannel{{Source: dbpilot.InstanceKey{Host: "127.0.0.1", Port: 3306}, IORunning: dbpilot.IORunning, SQLRunning: true, SecondsBehind: &lag, UsingGTID: "Slave_Pos"}},
		SemiSync: dbpilot.SemiSyncState{ReplicaEnabled: true, ReplicaActive: true},
		Replicas: []dbpilot.InstanceKey{{Host: "127.0.0.1", Port: 3308}},
		Galera:   &dbpilot.GaleraState{LocalState: 4, ClusterStatus: "Primary", ClusterSize: 3, Ready: true, Connected: true},
	}
}

// mutations returns, for every leaf field of an Instance (into structs,
// the first element of slices and pointed-to structs), a function that
// changes it on a copy made by shapeBase.
func mutations() map[string]func(*dbpilot.Instance) {
	out := map[string]func(*dbpilot.Instance){}
	var walk func(path string, get func(*dbpilot.Instance) reflect.Value, t reflect.Type)
	walk = func(path string, get func(*dbpilot.Instance) reflect.Value, t reflect.Type) {
		switch t.Kind() {
		case reflect.Struct:
			if t == reflect.TypeOf(time.Time{}) {
				out[path] = func(i *dbpilot.Instance) {
					v := get(i)
					v.Set(reflect.ValueOf(v.Interface().(time.Time).Add(time.Second)))
				}
				return
			}
			for n := 0; n < t.NumField(); n++ {
				n := n
				walk(path+"."+t.Field(n).Name, func(i *dbpilot.Instance) reflect.Value { return get(i).Field(n) }, t.Field(n).Type)
			}
		case reflect.Pointer:
			out[path+"=nil"] = func(i *dbpilot.Instance) { v := get(i); v.Set(reflect.Zero(v.Type())) }
			walk(path, func(i *dbpilot.Instance) reflect.Value {
				p := get(i)
				if p.IsNil() {
					p.Set(reflect.New(t.Elem()))
				}
				return p.Elem()
			}, t.Elem())
		case reflect.Slice:
			out[path+"+1"] = func(i *dbpilot.Instance) { v := get(i); v.Set(reflect.Append(v, reflect.Zero(t.Elem()))) }
			walk(path+"[0]", func(i *dbpilot.Instance) reflect.Value {
				v := get(i)
				if v.Len() == 0 {
					v.Set(reflect.Append(v, reflect.Zero(t.Elem())))
				}
				return v.Index(0)
			}, t.Elem())
		case reflect.String:
			out[path] = func(i *dbpilot.Instance) { v := get(i); v.SetString(v.String() + "x") }
		case reflect.Bool:
			out[path] = func(i *dbpilot.Instance) { v := get(i); v.SetBool(!v.Bool()) }
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			out[path] = func(i *dbpilot.Instance) { v := get(i); v.SetInt(v.Int() + 1) }
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			out[path] = func(i *dbpilot.Instance) { v := get(i); v.SetUint(v.Uint() + 1) }
		case reflect.Float32, reflect.Float64:
			out[path] = func(i *dbpilot.Instance) { v := get(i); v.SetFloat(v.Float() + 1) }
		default:
			panic(fmt.Sprintf("%s: kind %s not covered", path, t.Kind()))
		}
	}
	walk("Instance", func(i *dbpilot.Instance) reflect.Value { return reflect.ValueOf(i).Elem() }, reflect.TypeOf(dbpilot.Instance{}))
	return out
}

// SameShape agrees with Shape for a change of every field of Instance, so
// that a field added to Shape and forgotten in SameShape (or the reverse)
// fails here.
func TestSameShapeAgreesWithShape(t *testing.T) {
	muts := mutations()
	if len(muts) < 60 {
		t.Fatalf("%d mutations: the walk missed fields", len(muts))
	}
	kept := 0
	for path, mutate := range muts {
		a, b := shapeBase(), shapeBase()
		mutate(b)
		want := reflect.DeepEqual(a.Shape(), b.Shape())
		if got := a.SameShape(b); got != want {
			t.Errorf("%s changed: SameShape %t, Shape equal %t", path, got, want)
		}
		if got := b.SameShape(a); got != want {
			t.Errorf("%s changed (reversed): SameShape %t, Shape equal %t", path, got, want)
		}
		if !want {
			kept++
		}
	}
	// What Shape keeps, and what it leaves out.
	if kept < 20 || kept > len(muts)-20 {
		t.Errorf("Shape keeps %d of %d fields changed: want the identity, role and states, not the counters", kept, len(muts))
	}
	a := shapeBase()
	if !a.SameShape(a.Shape()) || !a.Shape().SameShape(a) {
		t.Error("an instance and its shape differ")
	}
	b := shapeBase()
	b.Key.Host = "localhost"
	b.Channels[0].Source.Host = "LOCALHOST"
	a.Key.Host = "127.0.0.1"
	if !a.SameShape(b) {
		t.Error("keys are compared as given, not normalized")
	}
	var nilInst *dbpilot.Instance
	if nilInst.SameShape(a) || a.SameShape(nil) || !nilInst.SameShape(nil) {
		t.Error("nil instances")
	}
}
