# op validation: file:line:col, op index and type, what was expected and given
T=$ROOT/test/cli/data/tiny.pbtxt
sed 's/"size" value { i: 3 }/"size" value { i: -3 }/' $T > a.pbtxt; $PR check a.pbtxt; echo "exit $?"
sed 's/type: "mean"/type: "maen"/' $T > b.pbtxt; $PR check b.pbtxt; echo "exit $?"
sed 's/key: "act"/key: "activation"/' $T > c.pbtxt; $PR check c.pbtxt; echo "exit $?"
sed 's/inputs: \["h", "w2", "b2"\]/inputs: []/' $T > d.pbtxt; $PR check d.pbtxt; echo "exit $?"
sed 's/inputs: "loss"/inputs: "los"/' $T > e.pbtxt; $PR check e.pbtxt; echo "exit $?"
sed 's/{ s: "relu" }/{ s: "rleu" }/' $T > f.pbtxt; $PR check f.pbtxt; echo "exit $?"
sed 's/{ i: 2 }/{ f: 2.5 }/' $T > g.pbtxt; $PR check g.pbtxt; echo "exit $?"
sed 's/var { name: "x" shape: \[-1, 4\] }/var { name: "x" shape: [-1, 4] }\nvar { name: "w1" shape: [5, 3] }/' $T > h.pbtxt; $PR check h.pbtxt; echo "exit $?"
