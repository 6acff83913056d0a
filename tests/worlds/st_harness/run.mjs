// Runs SillyTavern's own checkWorldInfo (a copy prepare.mjs made) on cases read as JSON
// from stdin, and prints, per case, the comments of the entries each of its scans
// activates (sorted). A case: {name, book | card_book, scans: [chat, ...] (each chat its
// messages oldest first), settings (world_info_* over a fresh install's), character (the
// card's file name, for character filters), character_tags (its tags' ids: SillyTavern's
// tag map gives a character with none an empty list, tags.js 457-461), budget (the
// context, maxContext)}. The scans of a case run one after the
// other as generations (not dry runs), so the timed effects they set in the chat's
// metadata carry from one to the next, as in a chat.
const stub = await import('./stub.mjs');
const wi = await import('./world-info.mjs');
console.debug = () => {}; console.log = () => {}; console.warn = () => {}; console.table = () => {};
let data = ''; for await (const chunk of process.stdin) data += chunk;
const results = {};
for (const c of JSON.parse(data)) {
  const defaults = { world_info_depth: 2, world_info_budget: 100, world_info_include_names: false,
    world_info_recursive: true, world_info_case_sensitive: false, world_info_match_whole_words: true,
    world_info_max_recursion_steps: 0, world_info_min_activations: 0, world_info_min_activations_depth_max: 0,
    world_info_use_group_scoring: false, world_info_budget_cap: 0 };
  const settings = { ...defaults, ...(c.settings || {}), world_info: ['book'] };
  globalThis.CHARA_FILE = c.character;
  globalThis.TAG_KEY = c.character ? 'character' : null;
  globalThis.TAG_MAP = { character: c.character_tags || [] };
  delete stub.chat_metadata.timedWorldInfo;
  wi.worldInfoCache.clear();
  wi.setWorldInfoSettings(settings, { world_names: ['book'] });
  wi.worldInfoCache.set('book', c.card_book ? wi.convertCharacterBook(structuredClone(c.card_book)) : c.book);
  const out = [];
  for (const chat of c.scans) {
    const found = await wi.checkWorldInfo([...chat].reverse(), c.budget ?? 100000, false);
    out.push([...found.allActivatedEntries].map((e) => e.comment).sort());
  }
  results[c.name] = out;
}
process.stdout.write(JSON.stringify(results) + '\n');
