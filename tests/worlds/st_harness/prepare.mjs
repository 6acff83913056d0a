// Makes a runnable copy of SillyTavern's public/scripts/world-info.js (its path the first
// argument; release 1.12.6 is the one the cases were recorded with) in the folder given
// second: every import rewritten to ./stub.mjs, and convertCharacterBook exported. The copy
// is made outside this repository: SillyTavern's code (AGPL-3.0) is never committed here.
import { readFileSync, writeFileSync, copyFileSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const [source, into] = process.argv.slice(2);
const here = dirname(fileURLToPath(import.meta.url));
let code = readFileSync(source, 'utf8');
code = code.replace(/^(import \{[^}]*\} from )'[^']+';$/gm, "$1'./stub.mjs';");
code += '\nexport { convertCharacterBook };\n';
writeFileSync(join(into, 'world-info.mjs'), code);
copyFileSync(join(here, 'stub.mjs'), join(into, 'stub.mjs'));
copyFileSync(join(here, 'run.mjs'), join(into, 'run.mjs'));
