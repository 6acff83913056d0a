#!lua name=fabula
--[[
Fabula's Redis functions. Loaded once per server with FUNCTION LOAD REPLACE (see memory/lua.py).

fabula_commit: commits one turn's delta atomically (a function runs to its end or not at all,
and every check happens before the first write, so a refused delta writes nothing).
Its arguments and the rules of the stored records it relies on are written down in
memory/payload.py, the one place that writes them. Keys are not built here: the caller
passes the layout from memory/keys.py. All keys share the story's hash tag, so the function
touches one cluster slot.

fabula_commit_tick: commits a tick's scenes, consecutive turns, all or none (graph/ticks).

fabula_fence: settles a commit whose reply was lost (memory/settle.py). Atomically, either
the turn is committed (its stored digest is returned) or the attempt is marked dead, and
fabula_commit refuses a dead attempt, so "not committed" stays true even for a call still on
its way to the server.
]]

-- A stored state or belief is closed at `turn`: stored without defaults, an open one has no
-- valid_to, which is appended as its last key.
local function closed(json, turn)
  return string.sub(json, 1, -2) .. ',"valid_to":' .. turn .. '}'
end

-- The id of a stored state or belief: its first key, {"id":"<id>", (ids hold no quote).
local ID_AT = #'{"id":"' + 1
local function record_id(json)
  return string.sub(json, ID_AT, string.find(json, '"', ID_AT, true) - 1)
end

-- Commands take at most CHUNK arguments after the key (unpack has a limit).
local CHUNK = 500

local function chunked(cmd, key, flat)
  if #flat <= CHUNK then
    if #flat > 0 then redis.call(cmd, key, unpack(flat)) end
    return
  end
  for i = 1, #flat, CHUNK do
    local part = {}
    for j = i, math.min(i + CHUNK - 1, #flat) do part[#part + 1] = flat[j] end
    redis.call(cmd, key, unpack(part))
  end
end

local function hmget(key, fields)
  if #fields <= CHUNK then return redis.call('HMGET', key, unpack(fields)) end
  local out = {}
  for i = 1, #fields, CHUNK do
    local part = {}
    for j = i, math.min(i + CHUNK - 1, #fields) do part[#part + 1] = fields[j] end
    local got = redis.call('HMGET', key, unpack(part))
    for j = 1, #got do out[i + j - 1] = got[j] end
  end
  return out
end

-- A stored entity starts {"id":"<id>","kind":"<kind>", (its first two fields).
local function kind_of(raw, id)
  local at = #'{"id":"' + #id + #'","kind":"' + 1
  return string.sub(raw, at, string.find(raw, '"', at, true) - 1)
end

-- `before` (optional): what earlier turns of the same atomic call introduce (a tick's
-- scenes, fabula_commit_tick), counted as stored.
local function check_refs(L, P, before)
  local new_entities, new_events, new_devs, new_hyps = {}, {}, {}, {}
  before = before or {entities = {}, events = {}, devs = {}, hyps = {}}
  for id, k in pairs(before.entities) do new_entities[id] = k end
  for id in pairs(before.events) do new_events[id] = true end
  for id in pairs(before.devs) do new_devs[id] = true end
  for id in pairs(before.hyps) do new_hyps[id] = true end
  for i, id in ipairs(P.entities.id) do new_entities[id] = P.entities.kind[i] end
  for _, id in ipairs(P.events.id) do new_events[id] = true end
  for i, id in ipairs(P.devs.id) do if P.devs.new[i] then new_devs[id] = true end end
  for _, id in ipairs(P.hyps.id) do new_hyps[id] = true end
  local R = P.refs
  -- the stored entities referred to, read at once
  local wanted, seen, stored = {}, {}, {}
  for i, id in ipairs(R.id) do
    if R.kind[i] == 'entity' and not new_entities[id] and not seen[id] then
      seen[id] = true
      wanted[#wanted + 1] = id
    end
  end
  if #wanted > 0 then
    local got = hmget(L.entities, wanted)
    for j, id in ipairs(wanted) do stored[id] = got[j] end
  end
  for i, id in ipairs(R.id) do
    local field, kind, want = R.field[i], R.kind[i], R.want[i]
    if kind == 'entity' then
      local k = new_entities[id]
      if not k and stored[id] then k = kind_of(stored[id], id) end
      if not k then
        return 'FABULA_INVALID ' .. field .. ' unknown entity ' .. id
      end
      if want ~= '' and k ~= want then
        return 'FABULA_INVALID ' .. field .. ' ' .. id .. ' is a ' .. k .. ', not a ' .. want
      end
    elseif kind == 'event' then
      -- `where`: the events hash of the branch that holds the event's turn
      local where = R.where[i]
      if not new_events[id] and (where == '' or redis.call('HEXISTS', where, id) == 0) then
        return 'FABULA_INVALID ' .. field .. ' unknown event ' .. id
      end
    elseif kind == 'development' then
      if not new_devs[id] and redis.call('HEXISTS', L.d, id) == 0 then
        return 'FABULA_INVALID ' .. field .. ' unknown development ' .. id
      end
    elseif kind == 'hypothesis' then
      if not new_hyps[id] and redis.call('HEXISTS', L.h, id) == 0 then
        return 'FABULA_INVALID ' .. field .. ' unknown hypothesis ' .. id
      end
    elseif kind == 'new_entity' then
      if before.entities[id] or redis.call('HEXISTS', L.entities, id) == 1 then
        return 'FABULA_INVALID ' .. field .. ' entity ' .. id .. ' already exists'
      end
    elseif kind == 'new_development' then
      if before.devs[id] or redis.call('HEXISTS', L.d, id) == 1 then
        return 'FABULA_INVALID ' .. field .. ' development ' .. id .. ' already exists'
      end
    end
  end
  return nil
end

-- Make jsons[i] the current record of slots[i] in the current hash `cur` (one HMGET, one
-- HSET). The record each one replaces (stored before, or written earlier in this batch) is
-- closed at `turn` and appended to `history` (flat id, json: the history hash holds closed
-- records only). Returns whether any of the slots held a record before.
local function replace(cur, slots, jsons, turn, history)
  local olds = hmget(cur, slots)
  local latest, order, held = {}, {}, false
  for i = 1, #slots do
    local slot = slots[i]
    local prev = latest[slot]
    if prev == nil then
      prev = olds[i]
      order[#order + 1] = slot
      if prev then held = true end
    end
    if prev then
      history[#history + 1] = record_id(prev)
      history[#history + 1] = closed(prev, turn)
    end
    latest[slot] = jsons[i]
  end
  local flat = {}
  for _, slot in ipairs(order) do
    flat[#flat + 1] = slot
    flat[#flat + 1] = latest[slot]
  end
  chunked('HSET', cur, flat)
  return held
end

local function commit(keys, args)
  local L = cjson.decode(args[1])
  local turn = tonumber(args[2])
  local digest = args[3]
  local turn_key, committed_at, attempt = args[5], args[6], args[8]
  local fence_key = string.gsub(L.fence, '<T>', tostring(turn), 1)
  if L.deleted and redis.call('EXISTS', L.deleted) == 1 then
    return redis.error_reply('FABULA_DELETED the story was deleted; nothing was written')
  end
  if attempt and redis.call('SISMEMBER', fence_key, attempt) == 1 then
    return redis.error_reply('FABULA_FENCED turn ' .. turn .. ' was reported not committed ' ..
      'when the reply to this call was lost; the call is refused and nothing was written')
  end

  local last = tonumber(redis.call('HGET', L.head, 'turn') or '-1')
  if turn <= last then
    local prev = redis.call('HGET', turn_key, tostring(turn))
    if prev and cjson.decode(prev).digest == digest then
      return 'duplicate'
    end
    return redis.error_reply('FABULA_CONFLICT turn ' .. turn ..
      ' is already committed with different content')
  end
  if turn ~= last + 1 then
    return redis.error_reply('FABULA_CONFLICT turn ' .. turn .. ' does not follow turn ' ..
      last .. '; the next turn is ' .. (last + 1))
  end
  local P = cjson.decode(args[4])
  local bad = check_refs(L, P)
  if bad then return redis.error_reply(bad) end

  -- every check passed: write, records in header order.
  -- the records follow as one argument, one JSON per line (JSON has no raw newline)
  local blob, pos = args[7] or '', 1
  local function nextrec()
    local stop = string.find(blob, '\n', pos, true) or (#blob + 1)
    local rec = string.sub(blob, pos, stop - 1)
    pos = stop + 1
    return rec
  end
  for _, id in ipairs(P.entities.id) do redis.call('HSETNX', L.entities, id, nextrec()) end
  -- the events; each witness keeps a first-person memory of each (its own where it has one)
  local E, flat, memories, witnesses = P.events, {}, {}, {}
  for i, id in ipairs(E.id) do
    flat[#flat + 1] = id
    flat[#flat + 1] = nextrec()
    local own = E.own[i]
    for _, who in ipairs(E.witnesses[i]) do
      local list = memories[who]
      if not list then list = {}; memories[who] = list; witnesses[#witnesses + 1] = who end
      list[#list + 1] = own[who] or E.memory[i]
    end
  end
  chunked('HSET', L.events, flat)
  for _, who in ipairs(witnesses) do
    chunked('RPUSH', (string.gsub(L.mem, '<C>', who, 1)), memories[who])
  end
  -- W: the new states become current, closing what they replace; every new record is
  -- indexed by its valid_from
  local S = P.states
  if #S.id > 0 then
    local jsons, from, history = {}, {}, {}
    for i, id in ipairs(S.id) do
      jsons[i] = nextrec()
      from[#from + 1] = turn
      from[#from + 1] = id
    end
    replace(L.w_cur, S.slot, jsons, turn, history)
    chunked('HSET', L.w_rec, history)
    chunked('ZADD', L.w_from, from)
  end
  -- the minds: the same per holder chain (one current hash each), history per root
  local B = P.beliefs
  local chains, chain_order, roots, root_order = {}, {}, {}, {}
  for i, id in ipairs(B.id) do
    local chain, root = B.chain[i], B.root[i]
    local c = chains[chain]
    if not c then
      c = {root = root, slots = {}, jsons = {}}
      chains[chain] = c
      chain_order[#chain_order + 1] = chain
    end
    c.slots[#c.slots + 1] = B.slot[i]
    c.jsons[#c.jsons + 1] = nextrec()
    local r = roots[root]
    if not r then
      r = {history = {}, from = {}}
      roots[root] = r
      root_order[#root_order + 1] = root
    end
    r.from[#r.from + 1] = turn
    r.from[#r.from + 1] = id
  end
  for _, chain in ipairs(chain_order) do
    local c = chains[chain]
    local cur = string.gsub(string.gsub(L.b_cur, '<C>', c.root, 1), '<H>', chain, 1)
    if not replace(cur, c.slots, c.jsons, turn, roots[c.root].history) then
      -- none of these slots held a belief: the chain's hash may be new (telling is idempotent)
      redis.call('SADD', (string.gsub(L.b_chains, '<C>', c.root, 1)), chain)
    end
  end
  for _, root in ipairs(root_order) do
    local r = roots[root]
    chunked('HSET', (string.gsub(L.b_rec, '<C>', root, 1)), r.history)
    chunked('ZADD', (string.gsub(L.b_from, '<C>', root, 1)), r.from)
  end
  -- shared beliefs: each appended to every member's shared log, its group put in every
  -- member's table of groups (memory/tracking/nested.py)
  local G = P.shared
  if G and #G.id > 0 then
    local logs, groups, members_order = {}, {}, {}
    for i = 1, #G.id do
      local rec = nextrec()
      for _, who in ipairs(G.members[i]) do
        local log = logs[who]
        if not log then
          log = {}; logs[who] = log; groups[who] = {}; members_order[#members_order + 1] = who
        end
        log[#log + 1] = rec
        groups[who][G.gid[i]] = G.group[i]
      end
    end
    for _, who in ipairs(members_order) do
      chunked('RPUSH', (string.gsub(L.s_log, '<C>', who, 1)), logs[who])
      local flat = {}
      for gid, members in pairs(groups[who]) do
        flat[#flat + 1] = gid
        flat[#flat + 1] = members
      end
      chunked('HSET', (string.gsub(L.s_groups, '<C>', who, 1)), flat)
    end
  end
  -- what each character now knows of: its own copy of each entity record named by its new
  -- beliefs and the events it witnessed ({"known_from":<turn>,"entity":<record>}), kept from
  -- the first turn it knew of it; a name that is no entity is skipped
  local K = P.known or {who = {}, ids = {}}  -- an older caller's header has none
  for i, who in ipairs(K.who) do
    local ids = K.ids[i]
    if #ids > 0 then
      local key = (string.gsub(L.known, '<C>', who, 1))
      local have = hmget(key, ids)
      local missing = {}
      for j, id in ipairs(ids) do if not have[j] then missing[#missing + 1] = id end end
      if #missing > 0 then
        local recs = hmget(L.entities, missing)
        local copies = {}
        for j, id in ipairs(missing) do
          if recs[j] then
            copies[#copies + 1] = id
            copies[#copies + 1] = '{"known_from":' .. turn .. ',"entity":' .. recs[j] .. '}'
          end
        end
        if #copies > 0 then chunked('HSET', key, copies) end
      end
    end
  end
  -- developments (new, or as a status change leaves them) and hypotheses (new, or realised):
  -- whole records, stored as they are
  flat = {}
  for _, id in ipairs(P.devs.id) do
    flat[#flat + 1] = id
    flat[#flat + 1] = nextrec()
  end
  chunked('HSET', L.d, flat)
  flat = {}
  for _, ids in ipairs({P.hyps.id, P.realised}) do
    for _, id in ipairs(ids) do
      flat[#flat + 1] = id
      flat[#flat + 1] = nextrec()
    end
  end
  chunked('HSET', L.h, flat)
  if P.usage ~= cjson.null then redis.call('HSET', L.usage, tostring(turn), P.usage) end
  redis.call('HSET', L.turns, tostring(turn), cjson.encode({
    text = P.text, digest = digest, events = E.id, committed_at = committed_at,
    scene = P.scene, clock = P.clock }))
  redis.call('HSET', L.head, 'turn', turn)
  redis.call('DEL', fence_key)  -- the turn is in: an attempt re-sent now is a duplicate
  return 'ok'
end

-- KEYS: the turns hash that holds the turn, the turn's fence set; ARGV: turn, attempt, the
-- fence's lifetime in seconds. The stored digest if the turn is committed, else nil, after
-- marking the attempt dead.
local function fence(keys, args)
  local stored = redis.call('HGET', keys[1], args[1])
  if stored then return cjson.decode(stored).digest end
  redis.call('SADD', keys[2], args[2])
  redis.call('EXPIRE', keys[2], tonumber(args[3]))
  return false
end

-- Records of one history valid at turn t (valid_from <= t < valid_to): the closed ones from
-- the history hash (KEYS[1]) through the valid_from index (KEYS[2]), and the current ones
-- valid from t on from the current hashes (KEYS[3..]). With a filter string, only records
-- whose JSON contains it (a holder chain) are kept.
local function as_of(keys, args)
  local rec_key, from_key = keys[1], keys[2]
  local t = tonumber(args[1])
  local filter = args[2] or ''
  local ids = redis.call('ZRANGEBYSCORE', from_key, '-inf', t)
  local out = {}
  local chunk = 1000
  for i = 1, #ids, chunk do
    local part = {}
    for j = i, math.min(i + chunk - 1, #ids) do part[#part + 1] = ids[j] end
    local vals = redis.call('HMGET', rec_key, unpack(part))
    for _, v in ipairs(vals) do
      if v then
        -- a closed record ends with its valid_to (see closed above); a record with none is
        -- current (an older store kept those here too): read from its current hash below
        local at = string.find(v, ',"valid_to":', 1, true)
        local to = at and tonumber(string.sub(v, at + #',"valid_to":', -2))
        if to and to > t and (filter == '' or string.find(v, filter, 1, true)) then
          out[#out + 1] = v
        end
      end
    end
  end
  for k = 3, #keys do
    for _, v in ipairs(redis.call('HVALS', keys[k])) do
      local at = string.find(v, '"valid_from":', 1, true)
      local from = at and tonumber(string.match(v, '^%d+', at + #'"valid_from":'))
      if from and from <= t and (filter == '' or string.find(v, filter, 1, true)) then
        out[#out + 1] = v
      end
    end
  end
  return out
end

-- Everything the author may see of one branch, now, in one call (see memory/snapshot.py):
-- {head, entities (flat id, json, ...), branch entry or false, W (jsons), characters (sorted
-- ids), their first-order beliefs (one list of jsons each), D (flat), H (flat), the world
-- pack or false, the recent turns ({turn, json} each)}. args: layout, branch, how many
-- recent turns, then the ancestors as turns-key/through pairs, nearest first.
local function snapshot(keys, args)
  local L = cjson.decode(args[1])
  local branch, recent = args[2], tonumber(args[3])
  local ancestors = {}
  for i = 4, #args, 2 do
    ancestors[#ancestors + 1] = {turns = args[i], through = tonumber(args[i + 1])}
  end
  local head = tonumber(redis.call('HGET', L.head, 'turn') or '-1')
  local entities = redis.call('HGETALL', L.entities)
  local characters = {}
  for i = 2, #entities, 2 do
    if cjson.decode(entities[i]).kind == 'character' then
      characters[#characters + 1] = entities[i - 1]
    end
  end
  table.sort(characters)
  local beliefs = {}
  for i, c in ipairs(characters) do
    beliefs[i] = redis.call('HVALS', (string.gsub(L.b_cur, '<C>', c)))
  end
  -- each recent turn from the branch that holds it (lineage.branch_for's rule)
  local turns = {}
  for t = math.max(1, head - recent + 1), head do
    local key = L.turns
    for _, anc in ipairs(ancestors) do
      if t <= anc.through then key = anc.turns end
    end
    local text = redis.call('HGET', key, tostring(t))
    if text then turns[#turns + 1] = {t, text} end
  end
  return {
    head, entities, redis.call('HGET', L.branches, branch) or false,
    redis.call('HVALS', L.w_cur), characters, beliefs,
    redis.call('HGETALL', L.d), redis.call('HGETALL', L.h),
    redis.call('HGET', L.meta, 'pack') or false, turns,
  }
end

-- The episode indexes (see memory/index/build.py): one call writes a batch of turns into the
-- branch's index and into each witness's own, and moves the watermark, atomically. args: the
-- layout (two key templates: the branch's index and a mind's, '<C>' the character, '<T>' a
-- term, '<E>' an entity), the watermark the caller read, the last turn of the batch, the
-- watermark of a branch never indexed (its fork turn), the batch:
-- {eps = {{id, time, day, json, len, tf = {term = count}, gtf, glen, ents, who,
-- mine = {json, len, tf, ents}}}}
-- ("gtf"/"glen": the counts of the episode's general terms, for the branch's index; "mine":
-- what a witness remembers, when it differs from the author's text), and how many episodes
-- on each side a window holds (the windows are made here: the branch's of its episodes, a
-- witness's of the episodes it remembers). Returns 'moved'
-- (another indexer got there first: nothing written), 'gone' (the branch no longer holds
-- those turns: nothing written) or 'ok'. BM25 weights are computed here,
-- against each index's own collection statistics after the batch.
local K1, B = 1.2, 0.75

local function fill(template, mark, value)
  local i, j = string.find(template, mark, 1, true)
  return string.sub(template, 1, i - 1) .. value .. string.sub(template, j + 1)
end

-- one posting family: a sorted set per term (key template K[family], '<T>' the term), each
-- episode scored by its BM25 weight against the family's average length (kept in the stats
-- hash as field `total`); tf/len name the episode's counts in that family
local function postings_of(K, eps, family, tf, len, total)
  local stats = redis.call('HMGET', K.n, 'episodes', total)
  local batch = 0
  for _, ep in ipairs(eps) do batch = batch + ep[len] end
  local avgdl = (tonumber(stats[2] or '0') + batch) / (tonumber(stats[1] or '0') + #eps)
  if avgdl < 1e-9 then avgdl = 1e-9 end
  local postings, terms = {}, {}
  for _, ep in ipairs(eps) do
    local norm = K1 * (1 - B + B * ep[len] / avgdl)
    for term, f in pairs(ep[tf]) do
      local p = postings[term]
      if not p then p = {}; postings[term] = p; terms[#terms + 1] = term end
      p[#p + 1] = string.format('%.4f', f * (K1 + 1) / (f + norm))
      p[#p + 1] = ep.id
    end
  end
  for _, term in ipairs(terms) do chunked('ZADD', fill(K[family], '<T>', term), postings[term]) end
  redis.call('HINCRBY', K.n, total, batch)
end

local function index_into(K, eps, windows)
  local records, times, days = {}, {}, {}
  local by_entity, entities = {}, {}
  for _, ep in ipairs(eps) do
    records[#records + 1] = ep.id
    records[#records + 1] = ep.json
    times[#times + 1] = ep.time
    times[#times + 1] = ep.id
    if ep.day then
      days[#days + 1] = ep.day
      days[#days + 1] = ep.id
    end
    for _, e in ipairs(ep.ents) do
      local p = by_entity[e]
      if not p then p = {}; by_entity[e] = p; entities[#entities + 1] = e end
      p[#p + 1] = ep.time
      p[#p + 1] = ep.id
    end
  end
  postings_of(K, eps, 't', 'tf', 'len', 'length')
  if windows then
    postings_of(K, eps, 'w', 'wtf', 'wlen', 'wlength')
    if windows ~= 'mind' then postings_of(K, eps, 'g', 'gtf', 'glen', 'glength') end
  end
  chunked('HSET', K.ep, records)
  for _, e in ipairs(entities) do chunked('ZADD', fill(K.e, '<E>', e), by_entity[e]) end
  chunked('ZADD', K.time, times)
  if #days > 0 then chunked('ZADD', K.day, days) end
  redis.call('HINCRBY', K.n, 'episodes', #eps)
end

-- an index's episodes (in story order) with their windows ("wtf"/"wlen"), made of that
-- index's episodes only (a witness's: what it remembers): each episode's counts with those
-- of the `window` episodes of the same turn on each side of it among them (a reply beside
-- its question, a topic running over a few lines; a turn is the story time's whole part:
-- time = turn * 10000 + seq)
local function windowed(list, window)
  local out = {}
  for i, ep in ipairs(list) do
    local turn = math.floor(ep.time / 10000)
    local wtf, wlen = {}, 0
    for j = math.max(1, i - window), math.min(#list, i + window) do
      local other = list[j]
      if math.floor(other.time / 10000) == turn then
        for term, f in pairs(other.tf) do wtf[term] = (wtf[term] or 0) + f end
        wlen = wlen + other.len
      end
    end
    local copy = {}  -- a copy: a record shared by several witnesses gets a window in each
    for k, v in pairs(ep) do copy[k] = v end
    copy.wtf, copy.wlen = wtf, wlen
    out[i] = copy
  end
  return out
end

local function index(keys, args)
  local L = cjson.decode(args[1])
  local mark, last, start = tonumber(args[2]), tonumber(args[3]), tonumber(args[4])
  local held = redis.call('HGET', L.branch.n, 'turn')
  if (held and tonumber(held) or start) ~= mark then return 'moved' end
  -- a story deleted (or a branch dropped) while its turns were being read: write nothing
  if tonumber(redis.call('HGET', L.head, 'turn') or '-1') < last then return 'gone' end
  local batch = cjson.decode(args[5])
  local own, minds, order = {}, {}, {}
  for _, ep in ipairs(batch.eps) do
    if ep.day == cjson.null then ep.day = nil end
    own[#own + 1] = ep
    local mine = ep
    if ep.mine and ep.mine ~= cjson.null then
      mine = {id = ep.id, time = ep.time, day = ep.day, ents = ep.mine.ents,
              json = ep.mine.json, len = ep.mine.len, tf = ep.mine.tf}
    end
    for _, who in ipairs(ep.who) do
      local list = minds[who]
      if not list then list = {}; minds[who] = list; order[#order + 1] = who end
      list[#list + 1] = mine
    end
  end
  local window = tonumber(args[6]) or 2
  if #own > 0 then index_into(L.branch, windowed(own, window), true) end
  for _, who in ipairs(order) do
    local K = {}
    for name, template in pairs(L.mind) do K[name] = fill(template, '<C>', who) end
    index_into(K, windowed(minds[who], window), 'mind')
  end
  redis.call('HSET', L.branch.n, 'turn', last)
  return 'ok'
end

-- The memory-builder's read of B (memory/ingest.py `_current_beliefs`), in one call: every
-- character's current first-order beliefs, and its nested chains' current beliefs on the
-- slots a turn may touch. args: the layout (`cur`: a chain's current beliefs, '<C>' its
-- first holder and '<K>' the chain; `chains`: a character's set of chains, '<C>' it), the
-- characters (a JSON list), then the slots. Returns one {own, nested} per character: `own`
-- its beliefs' hash flattened (slot, record, ...), `nested` (chain, slot, record, ...) for
-- each nested chain that holds a belief on a slot asked for. Reads only.
local function beliefs(keys, args)
  local L = cjson.decode(args[1])
  local characters = cjson.decode(args[2])
  local slots = {}
  for i = 3, #args do slots[#slots + 1] = args[i] end
  local out = {}
  for _, c in ipairs(characters) do
    local own = redis.call('HGETALL', fill(fill(L.cur, '<C>', c), '<K>', c))
    local nested = {}
    if #slots > 0 then
      for _, chain in ipairs(redis.call('SMEMBERS', fill(L.chains, '<C>', c))) do
        local cut = string.find(chain, '>', 1, true)
        if cut then
          local key = fill(fill(L.cur, '<C>', string.sub(chain, 1, cut - 1)), '<K>', chain)
          local values = redis.call('HMGET', key, unpack(slots))
          for j = 1, #slots do
            if values[j] then
              nested[#nested + 1] = chain
              nested[#nested + 1] = slots[j]
              nested[#nested + 1] = values[j]
            end
          end
        end
      end
    end
    out[#out + 1] = {own, nested}
  end
  return out
end

-- KEYS: the head key, the branch's ticks hash. ARGV: n, the tick's number, its record
-- (JSON), then n groups of fabula_commit's eight arguments, one per scene, for consecutive
-- turns. Commits every scene's turn or none: each is checked (as if the scenes before it
-- were in) before the first write. The same tick sent again is 'duplicate' (every turn
-- there with its digest); other content for its turns is a conflict.
local function commit_tick(keys, args)
  local n, tick, record = tonumber(args[1]), args[2], args[3]
  local calls = {}
  for i = 1, n do
    local at = 3 + (i - 1) * 8
    calls[i] = {args[at + 1], args[at + 2], args[at + 3], args[at + 4], args[at + 5],
                args[at + 6], args[at + 7], args[at + 8]}
  end
  local L = cjson.decode(calls[1][1])
  if L.deleted and redis.call('EXISTS', L.deleted) == 1 then
    return redis.error_reply('FABULA_DELETED the story was deleted; nothing was written')
  end
  local last = tonumber(redis.call('HGET', L.head, 'turn') or '-1')
  local first = tonumber(calls[1][2])
  if first <= last then
    for _, c in ipairs(calls) do
      local prev = redis.call('HGET', c[5], c[2])
      if not prev or cjson.decode(prev).digest ~= c[3] then
        return redis.error_reply('FABULA_CONFLICT tick ' .. tick .. ': turn ' .. c[2] ..
          ' is already committed with different content')
      end
    end
    return 'duplicate'
  end
  if first ~= last + 1 then
    return redis.error_reply('FABULA_CONFLICT tick ' .. tick .. ' starts at turn ' .. first ..
      ', which does not follow turn ' .. last)
  end
  local before = {entities = {}, events = {}, devs = {}, hyps = {}}
  for i, c in ipairs(calls) do
    if tonumber(c[2]) ~= first + i - 1 then
      return redis.error_reply('FABULA_INVALID turn the scenes of tick ' .. tick ..
        ' are not consecutive turns')
    end
    local fence_key = string.gsub(L.fence, '<T>', c[2], 1)
    if c[8] and redis.call('SISMEMBER', fence_key, c[8]) == 1 then
      return redis.error_reply('FABULA_FENCED turn ' .. c[2] .. ' was reported not committed')
    end
    local P = cjson.decode(c[4])
    local bad = check_refs(L, P, before)
    if bad then return redis.error_reply(bad .. ' (scene ' .. i .. ' of tick ' .. tick .. ')') end
    for j, id in ipairs(P.entities.id) do before.entities[id] = P.entities.kind[j] end
    for _, id in ipairs(P.events.id) do before.events[id] = true end
    for j, id in ipairs(P.devs.id) do if P.devs.new[j] then before.devs[id] = true end end
    for _, id in ipairs(P.hyps.id) do before.hyps[id] = true end
  end
  for _, c in ipairs(calls) do
    local done = commit({keys[1]}, c)
    if type(done) == 'table' and done.err then return done end  -- checked above: not reached
  end
  redis.call('HSET', keys[2], tick, record)
  return 'ok'
end

-- a tick waiting for a decision (memory/ticks.py): replace it (ARGV[2] its new document)
-- or drop it (ARGV[2] empty), only if the one waiting has the id ARGV[1]; 1 if done
local function swap_pending(keys, args)
  local raw = redis.call('GET', keys[1])
  if not raw or cjson.decode(raw).id ~= args[1] then return 0 end
  if args[2] == '' then redis.call('DEL', keys[1]) else redis.call('SET', keys[1], args[2]) end
  return 1
end

redis.register_function('fabula_commit', commit)
redis.register_function('fabula_swap_pending', swap_pending)
redis.register_function('fabula_commit_tick', commit_tick)
redis.register_function('fabula_fence', fence)
redis.register_function('fabula_index', index)
redis.register_function{function_name = 'fabula_snapshot', callback = snapshot,
  flags = {'no-writes'}}
redis.register_function{function_name = 'fabula_version', flags = {'no-writes'},
  callback = function() return '@VERSION@' end}
redis.register_function{function_name = 'fabula_as_of', callback = as_of, flags = {'no-writes'}}
redis.register_function{function_name = 'fabula_beliefs', callback = beliefs,
                         flags = {'no-writes'}}
