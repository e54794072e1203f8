"""lm_variants.py — netdescs/char_lm.pbtxt's other shapes the sequence-model issue names: a GRU 1x256
(linear_before_reset 1, PyTorch's formula) in the LSTM's place, and two LSTM layers. bench.py measures them
against PyTorch (compare_torch.py's LM_VARIANTS are PyTorch's side) and test/scripts/rnn_torch_f32.py checks
that they compute what PyTorch does. Text in, text out: no PyTorch needed."""

OP_LSTM = ('op { type: "lstm" inputs: ["x", "lstm.w", "lstm.r", "lstm.b", "", "h0", "c0"]\n'
           '     outputs: ["hs", "h_carry", "c_carry"]\n'
           '     attrs { key: "hidden_size" value { i: 256 } } }')
C_VAR = 'var { name: "c_carry" shape: [1, 32, 256] kind: STATE init { type: "constant" value: 0 } }\n'
C_OP = 'op { type: "broadcast_mul" inputs: ["c_carry", "keep"] outputs: "c0" }\n'


def variant_text(text, kind):
    """char_lm.pbtxt's text with kind "gru" or "2layer"; ValueError where the file no longer has the parts
    replaced."""
    for part in (OP_LSTM, C_VAR, C_OP):
        if part not in text:
            raise ValueError(f"char_lm.pbtxt changed; lm_variants cannot find: {part!r}")
    if kind == "gru":
        text = text.replace(C_VAR, "").replace(C_OP, "").replace('"lstm.', '"gru.')
        return text.replace(OP_LSTM.replace('"lstm.', '"gru.'),
                            'op { type: "gru" inputs: ["x", "gru.w", "gru.r", "gru.b", "", "h0"] '
                            'outputs: ["hs", "h_carry"]\n     attrs { key: "hidden_size" value { i: 256 } } '
                            'attrs { key: "linear_before_reset" value { i: 1 } } }')
    if kind == "2layer":
        text = text.replace("shape: [1, 32, 256] kind: STATE", "shape: [2, 32, 256] kind: STATE")
        text = text.replace(OP_LSTM, OP_LSTM.replace('"h0", "c0"]', '"h0", "c0", "", "lstm.wl"]').replace(
            "} } }", '} } attrs { key: "num_layers" value { i: 2 } } }'))
        return text.replace('var { name: "lstm.b"', 'var { name: "lstm.wl" kind: PARAM init { type: "uniform" '
                            'min: -0.0625 max: 0.0625 } }\nvar { name: "lstm.b"')
    raise ValueError(f"unknown char LM variant {kind!r}")
