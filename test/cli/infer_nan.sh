# infer's text output writes a NaN as nan, whatever its sign bit (glibc's
# printf says -nan for a negative one), and infinities as inf and -inf
printf '%s\n' 'name: "sc"' 'var { name: "x" shape: [-1, 2] }' \
  'op { type: "scale" inputs: "x" outputs: "y" attrs { key: "scale" value { f: 2 } } }' >sc.pbtxt
/usr/bin/python3 -c 'import numpy as np; np.save("x.npy", np.array([[-np.nan, np.inf], [1.5, -np.inf]], np.float32))'
$PR infer sc.pbtxt --data x=x.npy --fetch y
