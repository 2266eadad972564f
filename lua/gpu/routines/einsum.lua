-- gpu.routines.einsum — gpu.einsum, gpu.tensordot, gpu.kron, gpu.inner, gpu.vdot.
--
-- Every contraction is a matmul: each operand's axes are permuted into (batch, own, summed)
-- order, reshaped to 3 axes and multiplied by the existing (BLAS / cuBLAS) matmul, which
-- broadcasts the batch axes; repeated labels in one operand become a diagonal (take),
-- labels only one operand has and the output lacks are summed first. Three or more operands
-- are contracted a pair at a time, greedily: the pair whose result is smallest first (as
-- NumPy's optimize="greedy" does). Nothing here loops over elements, and every step is a
-- dispatched op, so the results are differentiable on both devices. Complex operands take
-- the same path (cgemm/zgemm under the matmuls); nothing is conjugated but vdot's first.
local gpu = require "gpu"
local options = require "gpu.options"
local basic = require "gpu.routines.basic"

local M = {}

local function check_operand(fname, x, argn)
  return options.check_array(x, fname, argn, "operand")
end

-- ---- parsing -------------------------------------------------------------------------------

-- One term ("ij", "...ij", "i...") -> list of labels (single characters, and "..." once).
local function parse_term(term, fname)
  local labels, i, seen_ell = {}, 1, false
  while i <= #term do
    local c = term:sub(i, i)
    if c == "." then
      if term:sub(i, i + 2) ~= "..." then
        options.raise("%s: '.' must be part of an ellipsis '...' in subscripts", fname)
      end
      if seen_ell then options.raise("%s: more than one ellipsis '...' in one term", fname) end
      seen_ell = true
      labels[#labels + 1] = "..."
      i = i + 3
    elseif c:match("^%a$") then
      labels[#labels + 1] = c
      i = i + 1
    else
      options.raise("%s: invalid character '%s' in subscripts (letters, ',', '->' and '...' only)", fname, c)
    end
  end
  return labels, seen_ell
end

-- Expands a term's "..." into the broadcast labels "\1".."\n" (right-aligned against the
-- widest ellipsis, nell axes), after checking the term against the operand's ndim.
local function expand_term(labels, has_ell, ndim, k, fname, term)
  local named = #labels - (has_ell and 1 or 0)
  if (has_ell and named > ndim) or (not has_ell and named ~= ndim) then
    options.raise("%s: operand %d has %d axes but its subscripts '%s' name %d", fname, k, ndim, term, named)
  end
  return named
end

local function ell_label(i) return string.char(i) end   -- "\1", "\2": never a letter

-- parse(subscripts, ops) -> inputs (a list of label lists, one per operand, ellipsis expanded)
-- and output (a label list).
local function parse(subs, ops, fname)
  subs = subs:gsub("%s", "")
  local lhs, rhs = subs, nil
  local arrow = subs:find("->", 1, true)
  if arrow then lhs, rhs = subs:sub(1, arrow - 1), subs:sub(arrow + 2) end
  if subs:find("-", 1, true) and (not arrow or rhs:find("-", 1, true) or lhs:find("-", 1, true)) then
    options.raise("%s: subscripts have a '-' that is not part of one '->'", fname)
  end
  local terms = {}
  for t in (lhs .. ","):gmatch("([^,]*),") do terms[#terms + 1] = t end
  if #terms ~= #ops then
    options.raise("%s: the subscripts name %d operand%s but %d %s given", fname, #terms,
      #terms == 1 and "" or "s", #ops, #ops == 1 and "was" or "were")
  end
  local parsed, nell = {}, 0
  for k, t in ipairs(terms) do
    local labels, has_ell = parse_term(t, fname)
    local named = expand_term(labels, has_ell, ops[k].ndim, k, fname, t)
    parsed[k] = { labels = labels, nell = has_ell and ops[k].ndim - named or 0 }
    nell = math.max(nell, parsed[k].nell)
  end
  local inputs, count = {}, {}
  for k, p in ipairs(parsed) do
    local out = {}
    for _, l in ipairs(p.labels) do
      if l == "..." then
        for i = nell - p.nell + 1, nell do out[#out + 1] = ell_label(i) end
      else
        out[#out + 1] = l
        count[l] = (count[l] or 0) + 1
      end
    end
    inputs[k] = out
  end
  local output = {}
  if rhs then
    local labels, has_ell = parse_term(rhs, fname)
    local seen = {}
    for _, l in ipairs(labels) do
      if l == "..." then
        for i = 1, nell do output[#output + 1] = ell_label(i) end
      else
        if seen[l] then options.raise("%s: output subscript '%s' appears more than once", fname, l) end
        if not count[l] then options.raise("%s: output subscript '%s' is not in any input", fname, l) end
        seen[l] = true
        output[#output + 1] = l
      end
    end
    if not has_ell and nell > 0 then
      options.raise("%s: the inputs have '...' axes but the output has no '...' to put them in", fname)
    end
  else
    for i = 1, nell do output[#output + 1] = ell_label(i) end
    local once = {}
    for l, n in pairs(count) do if n == 1 then once[#once + 1] = l end end
    table.sort(once)
    for _, l in ipairs(once) do output[#output + 1] = l end
  end
  if #output > gpu._max_dims then
    options.raise("%s: the output would have %d axes, more than the %d an array can have", fname, #output, gpu._max_dims)
  end
  return inputs, output
end

-- ---- the operations on one labelled operand ---------------------------------------------------

local function index_of(list, v)
  for i, x in ipairs(list) do if x == v then return i end end
  return nil
end

-- The label sizes, checked: equal, or 1 (broadcast, as NumPy allows).
local function label_sizes(ops, inputs, fname)
  local size = {}
  for k, labels in ipairs(inputs) do
    local shape = ops[k].shape
    for i, l in ipairs(labels) do
      local n = shape[i]
      local have = size[l]
      if have == nil or have == 1 then
        size[l] = n
      elseif n ~= 1 and n ~= have then
        local name = l:match("%a") and ("'" .. l .. "'") or "'...'"
        options.raise("%s: subscript %s has size %d in operand %d but %d before", fname, name, n, k, have)
      end
    end
  end
  return size
end

-- Repeated labels of one operand (a trace or a diagonal): their diagonal, a label once.
local function take_diagonals(x, labels)
  labels = { table.unpack(labels) }
  local i = 1
  while i <= #labels do
    local j = index_of({ table.unpack(labels, i + 1) }, labels[i])
    if j then
      j = i + j
      local l = labels[i]
      x = basic.diagonal(x, 0, i, j)
      table.remove(labels, j)
      table.remove(labels, i)
      labels[#labels + 1] = l
    else
      i = i + 1
    end
  end
  return x, labels
end

-- Sums the axes whose labels are not in keep.
local function sum_unkept(x, labels, keep)
  local axes, rest = {}, {}
  for i, l in ipairs(labels) do
    if keep[l] then rest[#rest + 1] = l else axes[#axes + 1] = i end
  end
  if #axes == 0 then return x, labels end
  return x:sum(axes), rest
end

local function permute_to(x, labels, order)
  local perm, identity = {}, true
  for i, l in ipairs(order) do
    perm[i] = index_of(labels, l)
    if perm[i] ~= i then identity = false end
  end
  if identity or #perm < 2 then return x end
  return x:permute(perm)
end

-- contract(a, la, b, lb, keep) -> the product of two labelled operands over the labels
-- both have and keep lacks, as one matmul: a (batch, own, summed) @ b (batch, summed, own).
local function contract(a, la, b, lb, keep)
  local batch, summed, own_a, own_b = {}, {}, {}, {}
  for _, l in ipairs(la) do
    if index_of(lb, l) then
      if keep[l] then batch[#batch + 1] = l else summed[#summed + 1] = l end
    else
      own_a[#own_a + 1] = l
    end
  end
  for _, l in ipairs(lb) do
    if not index_of(la, l) then own_b[#own_b + 1] = l end
  end
  -- a summed label of size 1 on one side only is broadcast: the other side sums it alone
  local function squash(x, labels, other, olabels)
    local axes = {}
    for _, l in ipairs(summed) do
      local i = index_of(labels, l)
      if x.shape[i] ~= 1 and other.shape[index_of(olabels, l)] == 1 then axes[#axes + 1] = i end
    end
    if #axes == 0 then return x end
    return x:sum(axes, { keepdims = true })
  end
  a, b = squash(a, la, b, lb), squash(b, lb, a, la)
  local function dims(x, labels, list)
    local out = {}
    for i, l in ipairs(list) do out[i] = x.shape[index_of(labels, l)] end
    return out
  end
  local bshape_a, bshape_b = dims(a, la, batch), dims(b, lb, batch)
  local function count(x, labels, list)
    local n = 1
    for _, l in ipairs(list) do n = n * x.shape[index_of(labels, l)] end
    return n
  end
  local m, n, k = count(a, la, own_a), count(b, lb, own_b), count(a, la, summed)
  local order_a, order_b = {}, {}
  for _, l in ipairs(batch) do order_a[#order_a + 1] = l; order_b[#order_b + 1] = l end
  for _, l in ipairs(own_a) do order_a[#order_a + 1] = l end
  for _, l in ipairs(summed) do order_a[#order_a + 1] = l; order_b[#order_b + 1] = l end
  for _, l in ipairs(own_b) do order_b[#order_b + 1] = l end
  local sa = { table.unpack(bshape_a) }; sa[#sa + 1] = m; sa[#sa + 1] = k
  local sb = { table.unpack(bshape_b) }; sb[#sb + 1] = k; sb[#sb + 1] = n
  local am = permute_to(a, la, order_a):reshape(sa)
  local bm = permute_to(b, lb, order_b):reshape(sb)
  local c = gpu.matmul(am, bm)
  local out_labels, out_shape = {}, {}
  for i, l in ipairs(batch) do out_labels[#out_labels + 1] = l; out_shape[#out_shape + 1] = c.shape[i] end
  -- own axes keep their sizes here (1 where a later operand broadcasts them)
  for _, l in ipairs(own_a) do out_labels[#out_labels + 1] = l; out_shape[#out_shape + 1] = a.shape[index_of(la, l)] end
  for _, l in ipairs(own_b) do out_labels[#out_labels + 1] = l; out_shape[#out_shape + 1] = b.shape[index_of(lb, l)] end
  return c:reshape(out_shape), out_labels
end

-- The labels that stay after operands i and j are contracted: those in the output or in
-- another remaining operand.
local function keep_set(labels, output, i, j)
  local keep = {}
  for _, l in ipairs(output) do keep[l] = true end
  for k, ls in ipairs(labels) do
    if k ~= i and k ~= j then for _, l in ipairs(ls) do keep[l] = true end end
  end
  return keep
end

-- The result size of contracting operands i and j (the greedy order's cost).
local function pair_cost(labels, size, output, i, j)
  local keep, seen, n = keep_set(labels, output, i, j), {}, 1
  for _, ls in ipairs({ labels[i], labels[j] }) do
    for _, l in ipairs(ls) do
      if keep[l] and not seen[l] then seen[l] = true; n = n * size[l] end
    end
  end
  return n
end

function M.einsum(subs, ...)
  local fname = "einsum"
  if type(subs) ~= "string" then
    options.argerror(fname, 1, "subscripts string expected, got %s", options.type_name(subs))
  end
  local ops = table.pack(...)
  if ops.n == 0 then options.argerror(fname, 2, "at least one operand expected") end
  -- a Lua number is a 0-d operand of the first array's dtype and device (a weak scalar)
  local ref
  for k = 1, ops.n do if options.is_array(ops[k]) then ref = ref or ops[k] end end
  for k = 1, ops.n do
    if type(ops[k]) == "number" and ref and not ref:is_closed() then
      ops[k] = gpu.full({}, ops[k], { dtype = ref.dtype, device = ref.device })
    end
    check_operand(fname, ops[k], k + 1)
  end
  local inputs, output = parse(subs, ops, fname)
  local size = label_sizes(ops, inputs, fname)
  local xs, labels = {}, {}
  for k = 1, ops.n do
    local x, ls = take_diagonals(ops[k], inputs[k])
    xs[k], labels[k] = sum_unkept(x, ls, keep_set(inputs, output, k, k))
    -- keep_set above used the raw input labels; take_diagonals only merges repeats
  end
  while #xs > 1 do
    local bi, bj, best = 1, 2, nil
    if #xs > 2 then
      for i = 1, #xs - 1 do
        for j = i + 1, #xs do
          local c = pair_cost(labels, size, output, i, j)
          if best == nil or c < best then bi, bj, best = i, j, c end
        end
      end
    end
    local keep = keep_set(labels, output, bi, bj)
    local c, lc = contract(xs[bi], labels[bi], xs[bj], labels[bj], keep)
    table.remove(xs, bj); table.remove(labels, bj)
    table.remove(xs, bi); table.remove(labels, bi)
    xs[#xs + 1], labels[#labels + 1] = c, lc
  end
  local x, ls = sum_unkept(xs[1], labels[1], keep_set({}, output, 0, 0))
  local y = permute_to(x, ls, output)
  -- an output label of size 1 in every operand but broadcast against nothing stays 1;
  -- one broadcast against a larger size (single operand: never) is expanded
  local want, need = {}, false
  for i, l in ipairs(output) do
    want[i] = size[l]
    if y.shape[i] ~= size[l] then need = true end
  end
  if need then y = y:expand(want) end
  if rawequal(y, ops[1]) then y = y:view(y.shape) end   -- a new array object, as NumPy's einsum
  return y
end

-- ---- tensordot, kron, inner, vdot ------------------------------------------------------------

local function norm_axis(fname, ax, ndim, argn)
  return basic.norm_axis(fname, ax, ndim, argn, "axes must be integers")
end

function M.tensordot(a, b, axes)
  local fname = "tensordot"
  check_operand(fname, a, 1)
  check_operand(fname, b, 2)
  if axes == nil then axes = 2 end
  local ax_a, ax_b = {}, {}
  if math.type(axes) == "integer" then
    if axes < 0 or axes > a.ndim or axes > b.ndim then
      options.argerror(fname, 3, "axes %d must be in 0..%d (the operands have %d and %d axes)", axes,
        math.min(a.ndim, b.ndim), a.ndim, b.ndim)
    end
    for i = 1, axes do ax_a[i] = a.ndim - axes + i; ax_b[i] = i end
  elseif type(axes) == "table" and #axes == 2 then
    local pa, pb = axes[1], axes[2]
    if math.type(pa) == "integer" then pa = { pa } end
    if math.type(pb) == "integer" then pb = { pb } end
    if type(pa) ~= "table" or type(pb) ~= "table" or #pa ~= #pb then
      options.argerror(fname, 3, "axes must be {{axes of a}, {axes of b}} of equal lengths")
    end
    for i = 1, #pa do ax_a[i] = norm_axis(fname, pa[i], a.ndim, 3); ax_b[i] = norm_axis(fname, pb[i], b.ndim, 3) end
  else
    options.argerror(fname, 3, "axes must be a non-negative integer or {{axes of a}, {axes of b}}, got %s",
      options.type_name(axes))
  end
  -- letters: a's axes 1..na, b's contracted axes take a's letters
  local letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
  if a.ndim + b.ndim > #letters then options.raise("%s: too many axes (%d)", fname, a.ndim + b.ndim) end
  local la, lb, used = {}, {}, {}
  for i = 1, a.ndim do la[i] = letters:sub(i, i) end
  local next_letter = a.ndim
  for i = 1, #ax_a do
    if used[ax_a[i]] or used[-ax_b[i]] then options.argerror(fname, 3, "an axis is repeated") end
    used[ax_a[i]], used[-ax_b[i]] = true, true
    if a.shape[ax_a[i]] ~= b.shape[ax_b[i]] then
      options.argerror(fname, 3, "shape mismatch: axis %d of a has %d elements, axis %d of b has %d",
        ax_a[i], a.shape[ax_a[i]], ax_b[i], b.shape[ax_b[i]])
    end
    lb[ax_b[i]] = la[ax_a[i]]
  end
  local out = {}
  for i = 1, a.ndim do if not used[i] then out[#out + 1] = la[i] end end
  for i = 1, b.ndim do
    if not lb[i] then
      next_letter = next_letter + 1
      lb[i] = letters:sub(next_letter, next_letter)
      out[#out + 1] = lb[i]
    end
  end
  return M.einsum(table.concat(la) .. "," .. table.concat(lb) .. "->" .. table.concat(out), a, b)
end

-- kron: the outer product with each pair of axes merged (a's axis outer), leading axes of
-- the operand with fewer prepended as 1, as NumPy.
function M.kron(a, b)
  local fname = "kron"
  check_operand(fname, a, 1)
  check_operand(fname, b, 2)
  local nd = math.max(a.ndim, b.ndim)
  local sa, sb = {}, {}
  for i = 1, nd do
    sa[i] = a.shape[i - (nd - a.ndim)] or 1
    sb[i] = b.shape[i - (nd - b.ndim)] or 1
  end
  local ia, ib, out = {}, {}, {}
  for i = 1, nd do
    ia[2 * i - 1], ia[2 * i] = sa[i], 1
    ib[2 * i - 1], ib[2 * i] = 1, sb[i]
    out[i] = sa[i] * sb[i]
  end
  return gpu.mul(a:reshape(ia), b:reshape(ib)):reshape(out)
end

-- inner: the sum over the last axes of both (a number multiplies).
function M.inner(a, b)
  local fname = "inner"
  check_operand(fname, a, 1)
  check_operand(fname, b, 2)
  if a.ndim == 0 or b.ndim == 0 then return gpu.mul(a, b) end
  if a.shape[a.ndim] ~= b.shape[b.ndim] then
    options.argerror(fname, 2, "last axes differ: %d and %d elements", a.shape[a.ndim], b.shape[b.ndim])
  end
  return M.tensordot(a, b, { { -1 }, { -1 } })
end

-- vdot: the dot product of the flattened operands, the first conjugated when complex
-- (NumPy's: sum(conj(a) * b)).
function M.vdot(a, b)
  local fname = "vdot"
  check_operand(fname, a, 1)
  check_operand(fname, b, 2)
  if a.size ~= b.size then
    options.argerror(fname, 2, "the operands have %d and %d elements", a.size, b.size)
  end
  local fa = a:reshape(a.size)
  if gpu._dtypes[a.dtype].kind == "complex" then fa = gpu.conj(fa) end
  return gpu.dot(fa, b:reshape(b.size))
end

return M
