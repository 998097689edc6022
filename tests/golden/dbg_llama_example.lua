-- tests/golden/dbg_llama_example.lua — the "done when" session on examples/llama.lua itself (the
-- tiny config: 2 layers, dim 64, KV caches (1, 32, 2, 16) written at `pos`), for the transcript
-- dbg_llama_example.in. tests/golden/dbg_llama.lua is a smaller self-contained copy.
local llama = dofile("examples/llama.lua")
model = llama.build("tiny")
model.example_inputs = {torch.tensor({{3}}), 5}
