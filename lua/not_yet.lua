-- lua/not_yet.lua — clear "not yet supported" errors for PyTorch names fxdb does not have yet.
-- Layer: lua (embedded; runs after torch.lua, nn.lua and the other chunks, so it only fills gaps).
-- Without it `x:cos()` or `torch.cond(...)` would fail with Lua's "attempt to call a nil value".

-- Every stub is installed only where nothing else is defined: once an op is registered in
-- core/ops.def (the C side then creates torch.<name> and the method) or a feature lands in Lua,
-- the stub is never seen. Errors are fxdb error objects of kind "not_implemented", located at
-- the user's Lua line, as lx_bind.c's own "is not yet supported by fxdb" errors are.

local ERROR_MT = debug.getregistry()["fxdb.Error"]
local E = torch._export

local function raise(message, hint)
  local frame = E and E.user_frame and E.user_frame() or {}
  local e = {kind = "not_implemented", code = "FX_ENOTIMPL", message = message, hint = hint,
             location = frame.location, source = frame.source, func = frame.func}
  local stack = nn and nn._module_stack
  if stack and #stack > 0 then
    e.module, e.module_class = stack[#stack].path, stack[#stack].cls
  end
  error(setmetatable(e, ERROR_MT), 0)
end

local function stub(what, later)
  return function()
    raise(what .. " is not yet supported by fxdb (" .. later .. ")")
  end
end

-- ---- features of later issues ----------------------------------------------------------------

local HOP = "higher-order ops come with the control-flow issue; a Lua `if` on shapes specializes"
local DYN = "dynamic shapes come with a later issue; export specializes every size"

torch.cond = torch.cond or stub("torch.cond", HOP)
torch._higher_order_ops = torch._higher_order_ops or {}
for _, name in ipairs{"map", "scan", "while_loop"} do
  torch._higher_order_ops[name] = torch._higher_order_ops[name] or
    stub("torch._higher_order_ops." .. name, HOP)
end
torch.export = torch.export or {}
torch.export.Dim = torch.export.Dim or stub("torch.export.Dim", DYN)
torch.sym_min = torch.sym_min or stub("torch.sym_min", DYN)
torch.sym_max = torch.sym_max or stub("torch.sym_max", DYN)

-- ---- ops of docs/API.md §3 that core/ops.def does not register yet ------------------------------------

local OPS = {
  "pow", "remainder", "floor_divide", "abs", "exp", "log", "log1p", "sqrt", "rsqrt", "sin", "cos",
  "tanh", "sigmoid", "relu", "gelu", "silu", "reciprocal", "clamp", "minimum", "maximum", "where",
  "eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_not",
  "amax", "amin", "max", "min", "argmax", "argmin", "prod", "var", "std", "all", "any", "cumsum",
  "addmm", "outer", "baddbmm", "softmax", "log_softmax", "layer_norm", "rms_norm", "embedding",
  "dropout", "scaled_dot_product_attention", "unflatten", "split", "chunk", "unbind", "cat",
  "stack", "repeat", "diagonal", "index_select", "gather", "scatter", "scatter_add", "masked_fill",
  "masked_fill_", "index_copy", "diagonal_scatter", "as_strided_scatter", "tril", "triu",
}
local NOT_METHODS = {cat = true, stack = true, embedding = true, layer_norm = true, rms_norm = true,
                     scaled_dot_product_attention = true}
-- A name without a registered overload goes through the same C path as a registered one
-- (lx_call_opname via an op packet's __call), which raises "NAME is not yet supported by fxdb (no
-- aten.NAME overload is registered)" located like every other op error (tail calls recovered).
local PACKET_MT = getmetatable(torch.ops.aten.add)
local function op_stub(name)
  if PACKET_MT and PACKET_MT.__call then
    local packet = setmetatable({_name = name}, PACKET_MT)
    return function(...) return packet(...) end
  end
  return stub(name, "no aten." .. name .. " overload is registered")
end
local methods = getmetatable(torch.zeros(1)).__methods
for _, name in ipairs(OPS) do
  local f = op_stub(name)
  if torch[name] == nil then torch[name] = f end
  if methods and not NOT_METHODS[name] and methods[name] == nil then methods[name] = f end
end

-- ---- every other PyTorch name ------------------------------------------------------------------
-- torch.<name>, x:<name>() and nn.<Name> of a PyTorch function, Tensor method or module class
-- that fxdb does not have resolve to a stub raising "... is not yet supported by fxdb" (kind
-- not_implemented, at the user's line) instead of Lua's "attempt to call a nil value". The lists
-- are PyTorch's public names (torch 2.5's torch.*, torch.Tensor and torch.nn namespaces, trimmed
-- of Python-only helpers); a name outside them stays nil, so probing (`torch.foo == nil`) and
-- typos behave as in Lua. Names fxdb defines are never shadowed: the fallback is an __index.

local TORCH_FUNCTIONS = [[
abs absolute acos acosh adaptive_avg_pool1d adaptive_max_pool1d add addbmm addcdiv addcmul addmm
addmv addr adjoint all allclose amax amin aminmax angle any arange arccos arccosh arcsin arcsinh
arctan arctan2 arctanh argmax argmin argsort argwhere as_strided as_tensor asin asinh atan atan2
atanh atleast_1d atleast_2d atleast_3d avg_pool1d baddbmm bartlett_window batch_norm bernoulli
bilinear binary_cross_entropy_with_logits bincount binomial bitwise_and bitwise_left_shift
bitwise_not bitwise_or bitwise_right_shift bitwise_xor blackman_window block_diag bmm
broadcast_shapes broadcast_tensors broadcast_to bucketize cartesian_prod cat cdist ceil celu
chain_matmul cholesky cholesky_inverse cholesky_solve chunk clamp clamp_max clamp_min clip clone
column_stack combinations complex concat concatenate conj conj_physical constant_pad_nd conv1d
conv2d conv3d conv_tbc conv_transpose1d conv_transpose2d conv_transpose3d convolution copysign
corrcoef cos cosh cosine_embedding_loss cosine_similarity count_nonzero cov cross ctc_loss
cummax cummin cumprod cumsum cumulative_trapezoid deg2rad det detach diag diag_embed diagflat
diagonal diagonal_scatter diff digamma dist div divide dot dropout dsplit dstack einsum embedding
embedding_bag empty empty_like empty_strided eq equal erf erfc erfinv exp exp2 expm1 eye
fake_quantize_per_tensor_affine feature_dropout fix flatten flip fliplr flipud float_power floor
floor_divide fmax fmin fmod frac frexp frobenius_norm from_numpy full full_like gather gcd ge
geqrf ger gradient greater greater_equal group_norm gru_cell gt hamming_window hann_window
hardshrink heaviside hinge_embedding_loss histc histogram hsplit hspmm hstack hypot i0 igamma
igammac imag index_add index_copy index_fill index_put index_reduce index_select inner
instance_norm inverse is_complex is_floating_point is_nonzero is_tensor isclose isfinite isin
isinf isnan isneginf isposinf isreal kl_div kron kthvalue layer_norm lcm ldexp le lerp less
less_equal lgamma linspace log log10 log1p log2 log_softmax logaddexp logaddexp2 logcumsumexp
logdet logical_and logical_not logical_or logical_xor logit logspace logsumexp lstm_cell lt
lu_solve lu_unpack margin_ranking_loss masked_fill masked_scatter masked_select matmul
matrix_exp matrix_power max max_pool1d max_pool2d max_pool3d maximum mean median meshgrid min
minimum mm mode moveaxis movedim msort mul multinomial multiply mv mvlgamma nan_to_num nanmean
nanmedian nanquantile nansum narrow narrow_copy native_batch_norm native_dropout
native_group_norm native_layer_norm ne neg negative nextafter nonzero norm normal not_equal
numel ones ones_like orgqr ormqr outer pairwise_distance pdist permute pinverse pixel_shuffle
pixel_unshuffle poisson polar polygamma positive pow prelu prod quantile rad2deg rand rand_like
randint randint_like randn randn_like randperm range ravel real reciprocal relu remainder renorm
repeat_interleave reshape resolve_conj resolve_neg rms_norm rnn_relu_cell rnn_tanh_cell roll
rot90 round row_stack rrelu rsqrt rsub scalar_tensor scatter scatter_add scatter_reduce
searchsorted select select_scatter selu sgn sigmoid sign signbit sin sinc sinh slice_scatter
slogdet softmax sort split sqrt square squeeze stack std std_mean stft sub subtract sum svd
swapaxes swapdims t take take_along_dim tan tanh tensor tensor_split tensordot threshold tile
topk trace transpose trapezoid trapz triangular_solve tril tril_indices triplet_margin_loss triu
triu_indices true_divide trunc unbind unflatten unique unique_consecutive unravel_index unsqueeze
vander var var_mean vdot view_as_complex view_as_real vsplit vstack where xlogy zeros zeros_like
]]

local TENSOR_METHODS = [[
abs abs_ absolute acos acos_ acosh add add_ addbmm addcdiv addcdiv_ addcmul addcmul_ addmm addmm_
addmv addr align_as all allclose amax amin aminmax angle any apply_ arccos argmax argmin argsort
argwhere as_strided as_strided_ asin asin_ atan atan2 atan_ backward baddbmm baddbmm_ bernoulli
bernoulli_ bfloat16 bincount bitwise_and bitwise_not bitwise_or bitwise_xor bmm bool
broadcast_to byte cauchy_ ceil ceil_ char cholesky chunk clamp clamp_ clamp_max clamp_min clip
clip_ clone contiguous copy_ copysign cos cos_ cosh count_nonzero cov cpu cross cuda cummax
cummin cumprod cumprod_ cumsum cumsum_ data_ptr deg2rad dense_dim dequantize det detach detach_
diag diag_embed diagonal diagonal_scatter diff digamma dim dist div div_ divide dot double
dsplit element_size eq eq_ equal erf erf_ erfc erfinv exp exp_ expand expand_as expm1 expm1_
exponential_ fill_ fill_diagonal_ fix flatten flip fliplr flipud float float_power floor floor_
floor_divide floor_divide_ fmax fmin fmod fmod_ frac gather gcd ge geometric_ ger get_device grad
greater gt half hardshrink heaviside histc hsplit hypot index_add index_add_ index_copy
index_copy_ index_fill index_fill_ index_put index_put_ index_reduce index_select inner int
inverse is_complex is_contiguous is_floating_point is_nonzero is_pinned is_set_to is_shared
isclose isfinite isinf isnan isneginf isposinf isreal item kron kthvalue lcm ldexp le lerp lerp_
lgamma log log10 log1p log2 log_ log_normal_ log_softmax logaddexp logcumsumexp logdet
logical_and logical_not logical_or logical_xor logit logsumexp long lt lu masked_fill
masked_fill_ masked_scatter masked_scatter_ masked_select matmul matrix_exp matrix_power max
maximum mean median min minimum mm mode moveaxis movedim msort mul mul_ multinomial multiply mv
mvlgamma nan_to_num nan_to_num_ nanmean nanmedian nanquantile nansum narrow narrow_copy ndimension
ne neg neg_ negative nelement new_empty new_full new_ones new_tensor new_zeros nextafter nonzero
norm normal_ numel numpy outer permute pin_memory pinverse polygamma positive pow pow_ prod put_
quantile rad2deg random_ ravel reciprocal reciprocal_ record_stream register_hook relu relu_
remainder remainder_ renorm repeat repeat_interleave requires_grad_ reshape reshape_as resize_
resize_as_ resolve_conj resolve_neg retain_grad roll rot90 round round_ rsqrt rsqrt_ scatter
scatter_ scatter_add scatter_add_ scatter_reduce scatter_reduce_ select select_scatter set_ sgn
short sigmoid sigmoid_ sign sign_ signbit sin sin_ sinc sinh size slice_scatter slogdet softmax
sort split sqrt sqrt_ square square_ squeeze squeeze_ std stft storage storage_offset stride sub
sub_ subtract sum sum_to_size svd swapaxes swapdims t t_ take take_along_dim tan tan_ tanh tanh_
tensor_split tile to tolist topk trace transpose transpose_ triangular_solve tril tril_ triu triu_
true_divide trunc trunc_ type type_as unbind unflatten unfold uniform_ unique unique_consecutive
unsqueeze unsqueeze_ values var vdot view view_as vsplit where xlogy zero_
]]

local NN_MODULES = [[
AdaptiveAvgPool1d AdaptiveAvgPool2d AdaptiveAvgPool3d AdaptiveLogSoftmaxWithLoss
AdaptiveMaxPool1d AdaptiveMaxPool2d AdaptiveMaxPool3d AlphaDropout AvgPool1d AvgPool2d AvgPool3d
BCELoss BCEWithLogitsLoss BatchNorm1d BatchNorm2d BatchNorm3d Bilinear CELU CTCLoss
ChannelShuffle CircularPad1d CircularPad2d CircularPad3d ConstantPad1d ConstantPad2d
ConstantPad3d Conv1d Conv2d Conv3d ConvTranspose1d ConvTranspose2d ConvTranspose3d
CosineEmbeddingLoss CosineSimilarity CrossEntropyLoss Dropout Dropout1d Dropout2d Dropout3d ELU
Embedding EmbeddingBag FeatureAlphaDropout Flatten Fold FractionalMaxPool2d FractionalMaxPool3d
GELU GLU GRU GRUCell GaussianNLLLoss GroupNorm Hardshrink Hardsigmoid Hardswish Hardtanh
HingeEmbeddingLoss HuberLoss Identity InstanceNorm1d InstanceNorm2d InstanceNorm3d KLDivLoss
L1Loss LPPool1d LPPool2d LPPool3d LSTM LSTMCell LayerNorm LazyBatchNorm1d LazyBatchNorm2d
LazyConv1d LazyConv2d LazyLinear LeakyReLU Linear LocalResponseNorm LogSigmoid LogSoftmax MSELoss
MarginRankingLoss MaxPool1d MaxPool2d MaxPool3d MaxUnpool1d MaxUnpool2d MaxUnpool3d Mish Module
ModuleDict ModuleList MultiLabelMarginLoss MultiLabelSoftMarginLoss MultiMarginLoss
MultiheadAttention NLLLoss PReLU PairwiseDistance ParameterDict ParameterList PixelShuffle
PixelUnshuffle PoissonNLLLoss RMSNorm RNN RNNCell RReLU ReLU ReLU6 ReflectionPad1d
ReflectionPad2d ReflectionPad3d ReplicationPad1d ReplicationPad2d ReplicationPad3d SELU
Sequential SiLU Sigmoid SmoothL1Loss SoftMarginLoss Softmax Softmax2d Softmin Softplus Softshrink
Softsign Tanh Tanhshrink Threshold Transformer TransformerDecoder TransformerDecoderLayer
TransformerEncoder TransformerEncoderLayer TripletMarginLoss TripletMarginWithDistanceLoss
Unflatten Unfold Upsample UpsamplingBilinear2d UpsamplingNearest2d ZeroPad1d ZeroPad2d ZeroPad3d
]]

local function name_set(text)
  local set = {}
  for name in text:gmatch("%S+") do set[name] = true end
  return set
end
local torch_names, method_names, module_names =
  name_set(TORCH_FUNCTIONS), name_set(TENSOR_METHODS), name_set(NN_MODULES)

-- Falls back to `fallback(name)` for names in `known`, through an __index on t (chained after an
-- existing __index function or table).
local function install_fallback(t, known, fallback)
  local mt = getmetatable(t)
  if mt == nil then mt = {}; setmetatable(t, mt) end
  local prev = mt.__index
  mt.__index = function(tbl, k)
    if prev ~= nil then
      local v
      if type(prev) == "function" then v = prev(tbl, k) else v = prev[k] end
      if v ~= nil then return v end
    end
    if known[k] then return fallback(k) end
    return nil
  end
end

install_fallback(torch, torch_names, function(name) return op_stub(name) end)
if methods then install_fallback(methods, method_names, function(name) return op_stub(name) end) end

-- nn.<Module> stubs are callable (nn.Conv2d(...)) and also refuse being subclassed
-- (nn.Conv2d:extend(...)) or read (nn.Conv2d.forward) with the same error.
local module_stubs = {}
install_fallback(nn, module_names, function(name)
  local s = module_stubs[name]
  if s == nil then
    local msg = "nn." .. name .. " is not yet supported by fxdb (no module of that name is defined)"
    s = setmetatable({}, {
      __call = function() raise(msg) end,
      __index = function() raise(msg) end,
      __name = "nn." .. name,
    })
    module_stubs[name] = s
  end
  return s
end)
