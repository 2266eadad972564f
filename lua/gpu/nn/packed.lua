-- gpu.nn.utils' packed sequences, as PyTorch's torch.nn.utils.rnn: a batch of sequences of
-- different lengths in one time-major array without padding (PackedSequence), made by
-- pack_padded_sequence or pack_sequence and undone by pad_packed_sequence; the recurrent
-- layers (RNN, LSTM, GRU) take one and give one (run_packed).
--
-- A PackedSequence holds data (sum of lengths, *): at each time step t the rows of the
-- sequences longer than t - 1, longest first; batch_sizes (int64 on the cpu, one count per
-- step); and, when the batch was not given longest first, sorted_indices and
-- unsorted_indices (1-based permutations: sorted position -> batch index, and back).
local gpu = require "gpu"
local options = require "gpu.options"

local raise, argerror, check_array, type_name, shape_str = options.raise, options.argerror, options.check_array,
  options.type_name, options.shape_str

local P = {}

local PackedSequence = options.class_table("PackedSequence")
PackedSequence.__index = PackedSequence
function PackedSequence.__tostring(s)
  return ("PackedSequence(data=%s, batch_sizes=%s)"):format(shape_str(s.data.shape), table.concat(s.batch_sizes:totable(), ", "))
end
local function is_packed(v) return getmetatable(v) == PackedSequence end
P.is_packed = is_packed

-- :to(device) moves the data (the indices stay on the cpu, as PyTorch keeps batch_sizes)
function PackedSequence.to(s, device)
  if not is_packed(s) then raise("PackedSequence:to: use s:to(device) (a method: call it with ':')") end
  return setmetatable({ data = s.data:to(device), batch_sizes = s.batch_sizes, sorted_indices = s.sorted_indices,
                        unsorted_indices = s.unsorted_indices, lengths_ = s.lengths_ }, PackedSequence)
end

local function i64(t) return gpu.array(t, { dtype = "int64", device = "cpu" }) end

-- lengths as a Lua list of integers (from a list or a 1-D integer array)
local function lengths_list(fname, argn, lengths, B, T)
  local list
  if options.is_array(lengths) then
    if lengths.ndim ~= 1 or not (lengths.dtype:match("int") or lengths.dtype == "float32" or lengths.dtype == "float64") then
      argerror(fname, argn, "lengths must be a 1-D array of integers, got %s %s", lengths.dtype, shape_str(lengths.shape))
    end
    list = lengths:to("cpu"):totable()
  elseif type(lengths) == "table" then
    list = lengths
  else
    argerror(fname, argn, "lengths must be a list or a 1-D array of integers, got %s", type_name(lengths))
  end
  if #list ~= B then argerror(fname, argn, "lengths has %d entries but the batch has %d sequences", #list, B) end
  local out = {}
  for i, n in ipairs(list) do
    local v = math.tointeger(n)
    if v == nil or v < 1 or v > T then
      argerror(fname, argn, "lengths[%d] must be an integer in 1..%d (the padded length), got %s", i, T, tostring(n))
    end
    out[i] = v
  end
  return out
end

-- The rows of a time-major (T, B, *) array flattened to (T B, *) that hold the packed data,
-- time step by time step, longest sequence first: 1-based positions; and the batch sizes.
local function packed_rows(lens, order, B)
  local rows, sizes = {}, {}
  local T = lens[order[1]]
  for t = 1, T do
    local n = 0
    for _, b in ipairs(order) do
      if lens[b] >= t then
        n = n + 1
        rows[#rows + 1] = (t - 1) * B + b
      end
    end
    sizes[t] = n
  end
  return rows, sizes
end

local PACK = options.declare("nn.utils.pack_padded_sequence", {
  batch_first = { type = "boolean", default = false }, enforce_sorted = { type = "boolean", default = true },
}, { example = "gpu.nn.utils.pack_padded_sequence(gpu.ones(3, 2, 1), {3, 2}, %s)" })

-- pack_padded_sequence(input, lengths [, {batch_first = false, enforce_sorted = true}])
function P.pack_padded_sequence(input, lengths, opts)
  local fname = "nn.utils.pack_padded_sequence"
  check_array(input, fname, 1, "input")
  local o = PACK:check(opts, 3)
  if input.ndim < 2 then argerror(fname, 1, "input must have a time and a batch axis, got shape %s", shape_str(input.shape)) end
  local x = o.batch_first and input:transpose(1, 2) or input
  local T, B = x.shape[1], x.shape[2]
  local lens = lengths_list(fname, 2, lengths, B, T)
  local order = {}
  for b = 1, B do order[b] = b end
  local sorted, unsorted
  if o.enforce_sorted then
    for b = 2, B do
      if lens[b] > lens[b - 1] then
        argerror(fname, 2, "lengths must be sorted in decreasing order with enforce_sorted = true, got %d after %d "
          .. "(give enforce_sorted = false)", lens[b], lens[b - 1])
      end
    end
  else
    table.sort(order, function(a, b) if lens[a] ~= lens[b] then return lens[a] > lens[b] end return a < b end)
    local inv = {}
    for pos, b in ipairs(order) do inv[b] = pos end
    sorted, unsorted = i64(order), i64(inv)
  end
  local rows, sizes = packed_rows(lens, order, B)
  local flat = x:reshape(T * B, table.unpack(x.shape, 3))
  local data = flat:take(i64(rows):to(flat.device), 1)
  return setmetatable({ data = data, batch_sizes = i64(sizes), sorted_indices = sorted, unsorted_indices = unsorted,
                        lengths_ = lens }, PackedSequence)
end

-- The lengths of a packed sequence's sequences, in batch order (from its batch sizes).
local function lengths_of(s)
  if s.lengths_ then return s.lengths_ end
  local sizes = s.batch_sizes:totable()
  local B = sizes[1]
  local lens = {}
  for pos = 1, B do
    local n = 0
    for _, c in ipairs(sizes) do if c >= pos then n = n + 1 end end
    lens[pos] = n
  end
  if s.sorted_indices then
    local order, out = s.sorted_indices:totable(), {}
    for pos, b in ipairs(order) do out[b] = lens[pos] end
    return out
  end
  return lens
end
P.lengths_of = lengths_of

local function order_of(s)
  if s.sorted_indices then return s.sorted_indices:totable() end
  local o = {}
  for b = 1, s.batch_sizes:totable()[1] do o[b] = b end
  return o
end

local UNPACK = options.declare("nn.utils.pad_packed_sequence", {
  batch_first = { type = "boolean", default = false }, padding_value = { type = "number", default = 0 },
  total_length = { type = "integer", min = 1 },
}, { example = "gpu.nn.utils.pad_packed_sequence(gpu.nn.utils.pack_padded_sequence(gpu.ones(3, 2, 1), {3, 2}), %s)" })

-- pad_packed_sequence(sequence [, {batch_first = false, padding_value = 0, total_length}]) ->
-- padded (T, B, *) (batch_first: (B, T, *)), lengths (int64, batch order)
function P.pad_packed_sequence(s, opts)
  local fname = "nn.utils.pad_packed_sequence"
  if not is_packed(s) then argerror(fname, 1, "a PackedSequence expected, got %s", type_name(s)) end
  local o = UNPACK:check(opts, 2)
  local lens, order = lengths_of(s), order_of(s)
  local B, T = #lens, s.batch_sizes.shape[1]
  if o.total_length and o.total_length < T then
    argerror(fname, 2, "option 'total_length' (%d) is shorter than the longest sequence (%d)", o.total_length, T)
  end
  local TT = o.total_length or T
  local rows = packed_rows(lens, order, B)
  local d = s.data
  local rest = { table.unpack(d.shape, 2) }
  local flat = gpu.full({ TT * B, table.unpack(rest) }, o.padding_value, { dtype = d.dtype, device = d.device })
  flat = gpu.index_copy(flat, 1, i64(rows):to(d.device), d)
  local padded = flat:reshape(TT, B, table.unpack(rest))
  if o.batch_first then padded = padded:transpose(1, 2):contiguous() end
  return padded, i64(lens)
end

local PACK_SEQ = options.declare("nn.utils.pack_sequence", { enforce_sorted = { type = "boolean", default = true } },
  { example = "gpu.nn.utils.pack_sequence({gpu.ones(3, 1), gpu.ones(2, 1)}, %s)" })

-- pack_sequence(sequences [, {enforce_sorted = true}]): a list of (L_i, *) arrays
function P.pack_sequence(seqs, opts)
  local fname = "nn.utils.pack_sequence"
  if type(seqs) ~= "table" or options.is_array(seqs) or #seqs == 0 then
    argerror(fname, 1, "a non-empty list of arrays expected, got %s", type_name(seqs))
  end
  local o = PACK_SEQ:check(opts, 2)
  local lens = {}
  for i, x in ipairs(seqs) do
    check_array(x, fname, 1, ("sequences[%d]"):format(i))
    if x.ndim < 1 or x.shape[1] < 1 then argerror(fname, 1, "sequences[%d] has no time steps", i) end
    lens[i] = x.shape[1]
  end
  local padded = require("gpu.nn.utils").pad_sequence(seqs)
  return P.pack_padded_sequence(padded, lens, { enforce_sorted = o.enforce_sorted })
end

-- run_packed(layer, s, hx, kind): a recurrent layer over a PackedSequence: the sequences of
-- each length run together on their own steps (so a reverse direction starts at each one's
-- own end), the outputs packed as s, the final states at each sequence's last step, in
-- batch order (PyTorch's). hx as the layer takes it, its batch axis in batch order.
function P.run_packed(layer, s, hx, kind, fname)
  local padded, _ = P.pad_packed_sequence(s)                     -- (T, B, in)
  local lens = lengths_of(s)
  local B, T = #lens, padded.shape[1]
  local states = kind == "LSTM" and type(hx) == "table" and not options.is_array(hx) and { hx[1], hx[2] } or { hx }
  for _, h in ipairs(states) do
    if options.is_array(h) and (h.ndim ~= 3 or h.shape[2] ~= B) then
      argerror(fname, 2, "a state for a packed batch of %d sequences must be (layers * directions, %d, hidden), got %s",
        B, B, shape_str(h.shape))
    end
  end
  local groups, by_len = {}, {}
  for b = 1, B do
    local L = lens[b]
    if by_len[L] == nil then by_len[L] = {}; groups[#groups + 1] = L end
    table.insert(by_len[L], b)
  end
  local outs, hs, cs, cols = {}, {}, {}, {}
  local function pick(h, idx) return h and h:take(idx, 2) or nil end
  for gi, L in ipairs(groups) do
    local idx = i64(by_len[L]):to(padded.device)
    local sub = padded[{ { 1, L } }]:take(idx, 2)              -- (L, n, in)
    local state
    if kind == "LSTM" then
      state = hx and { pick(hx[1], idx), pick(hx[2], idx) } or nil
    else
      state = pick(hx, idx)
    end
    local bf = layer.batch_first
    local y, hn = layer:forward(bf and sub:transpose(1, 2) or sub, state)
    if bf then y = y:transpose(1, 2) end
    if L < T then y = gpu.pad(y, { { 0, T - L }, { 0, 0 }, { 0, 0 } }) end
    outs[gi] = y
    if kind == "LSTM" then hs[gi], cs[gi] = hn[1], hn[2] else hs[gi] = hn end
    for _, b in ipairs(by_len[L]) do cols[#cols + 1] = b end
  end
  local inv = {}
  for pos, b in ipairs(cols) do inv[b] = pos end
  local back = i64(inv):to(padded.device)
  local out = gpu.concat(outs, 2):take(back, 2)                -- (T, B, D H), batch order
  local order = order_of(s)
  local rows = packed_rows(lens, order, B)
  local data = out:reshape(T * B, out.shape[3]):take(i64(rows):to(out.device), 1)
  local packed = setmetatable({ data = data, batch_sizes = s.batch_sizes, sorted_indices = s.sorted_indices,
                                unsorted_indices = s.unsorted_indices, lengths_ = lens }, PackedSequence)
  local h = gpu.concat(hs, 2):take(back, 2)
  if kind == "LSTM" then return packed, { h, gpu.concat(cs, 2):take(back, 2) } end
  return packed, h
end

P.PackedSequence = PackedSequence
return P
