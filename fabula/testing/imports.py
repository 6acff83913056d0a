"""Cards, lorebooks and containers written from the specs (character-card V2 and V3,
SillyTavern World Info, NovelAI, Agnai, KoboldAI), made in code for the import tests."""

from __future__ import annotations

import base64
import io
import json
import struct
import zipfile
import zlib
from pathlib import Path
from typing import Any

__all__ = [
    "TINY_JPEG",
    "UNKNOWN_EXTENSION",
    "agnai_book",
    "b64",
    "bookworld_preset",
    "card_png",
    "charx",
    "evening_cards",
    "instructed_card",
    "kobold_book",
    "novelai_book",
    "plist_card",
    "prose_card",
    "seraphina_card",
    "seraphina_png",
    "st_world_info",
    "tiny_png",
    "v1_card",
    "v2_card",
    "v3_card",
    "v3_lorebook",
    "wpp_card",
    "write_json",
]


UNKNOWN_EXTENSION = {"deep": {"list": [1, 2.5, None, "ü"], "flag": True}, "empty": {}}
"""An extension no frontend knows: it must come back byte for byte."""


def v1_card() -> dict[str, Any]:
    """A TavernAI (V1) card: a flat object, macros in its texts."""
    return {
        "name": "Ada",
        "description": "{{char}} keeps the lighthouse logbook.",
        "personality": "clipped, dry",
        "scenario": "A storm-bound island; <USER> has come by boat.",
        "first_mes": "*<BOT> looks up.* Who are you, {{user}}?",
        "mes_example": "<START>\n{{user}}: Hello\n{{char}}: Go away.\n<START>\n{{user}}: The log?\n"
        "{{char}}: Mine.",
    }


def v2_card(name: str = "Ben", book: bool = True) -> dict[str, Any]:
    """A V2 card with an embedded character_book, SillyTavern's extensions and one unknown."""
    data: dict[str, Any] = {
        "name": name,
        "description": "{{char}} is a fisherman who lands more than fish.",
        "personality": "easy, evasive",
        "scenario": "The cove at night.",
        "first_mes": "Evening, {{user}}.",
        "mes_example": "<START>\n{{char}}: Nice night for it.",
        "creator_notes": "Use with the lighthouse.",
        "system_prompt": "You are {{char}}.",
        "post_history_instructions": "Stay evasive.",
        "alternate_greetings": ["{{char}} hauls a crate ashore.", ""],
        "tags": ["smuggler", "sea"],
        "creator": "someone",
        "character_version": "1.2",
        "extensions": {
            "talkativeness": "0.5",
            "fav": False,
            "world": "Cove",
            "depth_prompt": {"prompt": "Ben hides brandy.", "depth": 4, "role": "system"},
            "x_unknown": UNKNOWN_EXTENSION,
        },
        "x_field_from_the_future": [1, {"a": "b"}],
    }
    if book:
        data["character_book"] = {
            "name": f"{name}'s secrets",
            "scan_depth": 4,
            "token_budget": 500,
            "recursive_scanning": False,
            "extensions": {"x_book": 1},
            "entries": [
                {
                    "keys": ["brandy", "crate"],
                    "content": "{{char}} hides brandy in the sea chest.",
                    "extensions": {"selectiveLogic": 2, "match_whole_words": True, "x_e": [1]},
                    "enabled": True,
                    "insertion_order": 10,
                    "case_sensitive": False,
                    "name": "brandy",
                    "priority": 5,
                    "id": 0,
                    "comment": "the secret",
                    "selective": True,
                    "secondary_keys": ["inspector"],
                    "constant": False,
                    "position": "before_char",
                }
            ],
        }
    return {"spec": "chara_card_v2", "spec_version": "2.0", "data": data}


def v3_card(name: str = "Cora") -> dict[str, Any]:
    """A V3 card: nickname, group-only greetings, assets, a regex lorebook entry with a
    decorator."""
    return {
        "spec": "chara_card_v3",
        "spec_version": "3.0",
        "data": {
            "name": name,
            "nickname": "the inspector",
            "description": "{{char}} comes from the mainland board.",
            "personality": "precise, polite",
            "scenario": "The lamp room.",
            "first_mes": "I am {{char}}.",
            "mes_example": "",
            "creator_notes": "",
            "system_prompt": "",
            "post_history_instructions": "",
            "alternate_greetings": [],
            "group_only_greetings": ["{{char}} nods to everyone."],
            "tags": [],
            "creator": "",
            "character_version": "",
            "extensions": {"x_v3": UNKNOWN_EXTENSION},
            "assets": [{"type": "icon", "uri": "ccdefault:", "name": "main", "ext": "png"}],
            "creator_notes_multilingual": {"fr": "Une inspectrice."},
            "source": ["https://example.org/cora"],
            "creation_date": 1700000000,
            "modification_date": 0,
            "character_book": {
                "extensions": {},
                "entries": [
                    {
                        "keys": ["log(book)?"],
                        "content": "@@depth 4\n@@@instruct_depth 4\nThe logbook lists every boat.",
                        "extensions": {},
                        "enabled": True,
                        "insertion_order": 1,
                        "use_regex": True,
                        "constant": False,
                    }
                ],
            },
        },
    }


def v3_lorebook() -> dict[str, Any]:
    """A standalone V3 lorebook."""
    return {
        "spec": "lorebook_v3",
        "data": {
            "name": "The island",
            "description": "Places and people.",
            "recursive_scanning": True,
            "extensions": {"x_lb": UNKNOWN_EXTENSION},
            "entries": [
                {
                    "keys": ["cove"],
                    "content": "The cove is shingle.",
                    "extensions": {"x": 1},
                    "enabled": True,
                    "insertion_order": 2,
                    "use_regex": False,
                    "constant": False,
                },
                {
                    "keys": ["storm"],
                    "content": "Storms close the harbour.",
                    "extensions": {},
                    "enabled": True,
                    "insertion_order": 1,
                    "use_regex": False,
                    "constant": True,
                },
            ],
        },
    }


def st_world_info() -> dict[str, Any]:
    """A SillyTavern World Info file."""
    return {
        "entries": {
            "0": {
                "uid": 0,
                "key": ["tower", "/lamp\\s+room/i"],
                "keysecondary": ["night"],
                "comment": "The tower",
                "content": "The tower is white.",
                "constant": False,
                "vectorized": False,
                "selective": True,
                "selectiveLogic": 3,
                "addMemo": True,
                "order": 50,
                "position": 4,
                "disable": False,
                "excludeRecursion": True,
                "preventRecursion": False,
                "delayUntilRecursion": False,
                "probability": 100,
                "useProbability": True,
                "depth": 4,
                "group": "",
                "groupOverride": False,
                "groupWeight": 100,
                "scanDepth": None,
                "caseSensitive": True,
                "matchWholeWords": None,
                "useGroupScoring": None,
                "automationId": "",
                "role": None,
                "sticky": 0,
                "cooldown": 0,
                "delay": 0,
                "ignoreBudget": False,
            },
            "1": {
                "uid": 1,
                "key": ["boat"],
                "keysecondary": [],
                "comment": "",
                "content": "Boats land at night.",
                "disable": True,
                "order": 100,
            },
        },
        "originalData": {"name": "island"},
    }


def novelai_book() -> dict[str, Any]:
    """A NovelAI .lorebook."""
    return {
        "lorebookVersion": 5,
        "entries": [
            {
                "text": "Ada keeps the log.",
                "contextConfig": {
                    "prefix": "",
                    "suffix": "\n",
                    "tokenBudget": 1,
                    "reservedTokens": 0,
                    "budgetPriority": 400,
                    "trimDirection": "trimBottom",
                    "insertionType": "newline",
                    "maximumTrimType": "sentence",
                    "insertionPosition": -1,
                },
                "lastUpdatedAt": 1,
                "displayName": "Ada",
                "id": "a-1",
                "keys": ["Ada"],
                "searchRange": 1000,
                "enabled": True,
                "forceActivation": False,
                "keyRelative": False,
                "nonStoryActivatable": False,
                "category": "",
                "loreBiasGroups": [],
            }
        ],
        "settings": {"orderByKeyLocations": False},
        "categories": [],
    }


def agnai_book() -> dict[str, Any]:
    """An Agnai memory book."""
    return {
        "kind": "memory",
        "_id": "m1",
        "name": "Agnai book",
        "description": "d",
        "entries": [
            {
                "name": "key",
                "entry": "The spare key is brass.",
                "keywords": ["key"],
                "priority": 3,
                "weight": 2,
                "enabled": True,
            }
        ],
    }


def kobold_book() -> list[dict[str, Any]]:
    """KoboldAI World Info (a list of entries; keys as one comma-separated text)."""
    return [
        {
            "key": "chest, sea chest",
            "keysecondary": "",
            "content": "The chest is oak.",
            "comment": "chest",
            "constant": False,
            "selective": False,
            "folder": None,
            "uid": 7,
        }
    ]


def _chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def tiny_png() -> bytes:
    """A valid 1x1 PNG."""
    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    pixels = zlib.compress(b"\x00\xff\x00\x00")
    return (
        b"\x89PNG\r\n\x1a\n"
        + _chunk(b"IHDR", header)
        + _chunk(b"IDAT", pixels)
        + _chunk(b"IEND", b"")
    )


def card_png(texts: dict[str, bytes]) -> bytes:
    """A PNG with ``texts`` as tEXt chunks (keyword -> raw text)."""
    png = tiny_png()
    extra = b"".join(_chunk(b"tEXt", k.encode() + b"\x00" + v) for k, v in texts.items())
    return png[:-12] + extra + png[-12:]


def b64(card: dict[str, Any]) -> bytes:
    """A card as a PNG chunk's text: base64 of its UTF-8 JSON."""
    return base64.b64encode(json.dumps(card).encode())


def charx(card: dict[str, Any], members: dict[str, bytes] | None = None) -> bytes:
    """A CHARX archive: card.json and ``members``."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("card.json", json.dumps(card))
        for name, data in (members or {}).items():
            z.writestr(name, data)
    return buf.getvalue()


def write_json(path: Path, doc: Any) -> Path:
    """Write ``doc`` as JSON at ``path``; returns the path."""
    path.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    return path


TINY_JPEG = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00" + b"\x00" * 64 + b"\xff\xd9"
"""The first and last bytes of a JPEG (what a picture is told by), as BookWorld's
``icon.png`` files often are."""


def bookworld_preset(root: Path) -> Path:
    """A BookWorld preset in ``root``: one role, Ann (``data/roles/isle/Ann-en/``, with an
    ``icon.png`` and a ``role_lines.jsonl``), at one place; returns the preset's path."""
    world = root / "data/worlds/isle"
    role = root / "data/roles/isle/Ann-en"
    for folder in (root / "experiment_presets", world, root / "data/locations", role):
        folder.mkdir(parents=True)
    write_json(world / "general.json", {"world_name": "Isle", "description": "An isle."})
    places = {"harbour": {"location_name": "Harbour", "description": "Boats."}}
    write_json(root / "data/locations/isle.json", places)
    info = {"role_code": "Ann-en", "role_name": "Ann", "profile": "A sailor."}
    write_json(role / "role_info.json", info)
    (role / "icon.png").write_bytes(tiny_png())
    (role / "role_lines.jsonl").write_text('{"text": "Ahoy."}\n')
    doc = {
        "world_file_path": "./data/worlds/isle/general.json",
        "loc_file_path": "./data/locations/isle.json",
        "role_file_dir": "./data/roles/",
        "role_agent_codes": ["Ann-en"],
        "source": "isle",
    }
    return write_json(root / "experiment_presets/isle.json", doc)


# --- community cards, one in each shape the community writes them in (W++, PList with
# Ali:Chat, <START> examples, <CHR>/<USER> tags, instructions to a model, plain prose),
# written for these tests from the formats' public descriptions


def seraphina_card() -> dict[str, Any]:
    """A V2 card in the shape of SillyTavern's stock one: a W++ description ending in an
    Ali:Chat example, ``<START>`` examples in ``mes_example``, a first message with
    ``*actions*``, and its own book whose entries are Ali:Chat exchanges."""

    def entry(uid: int, keys: list[str], asked: str, answer: str) -> dict[str, Any]:
        content = f'{{{{user}}}}: "{asked}"\n{{{{char}}}}: {answer}'
        return {
            "keys": keys,
            "content": content,
            "enabled": True,
            "id": uid,
            "insertion_order": uid,
            "extensions": {},
        }

    data = {
        "name": "Seraphina",
        "description": (
            '[{{char}}\'s Personality= "caring", "protective", "gentle", "watchful", "warm"]\n'
            '[{{char}}\'s body= "pink hair", "long hair", "amber eyes", "pale skin"]\n'
            '[{{char}}\'s clothes= "black sundress"]\n'
            "<START>\n"
            '{{user}}: "Describe your traits?"\n'
            "{{char}}: *{{char}} tilts her head, a faint glow at her fingertips.* "
            '"I am the keeper of this glade. I mend what is hurt, and I watch the paths '
            'so that nothing from the dark reaches those who rest here."'
        ),
        "personality": "caring, protective, gentle",
        "scenario": (
            "{{user}} was hurt by shadow beasts in the forest of Eldoria. {{char}} carried "
            "{{user}} to her glade, where {{user}} wakes."
        ),
        "first_mes": (
            "*You wake on a bed of moss. A woman with pink hair kneels beside you, her hands "
            'warm with light.* "Easy, {{user}}. The beasts nearly had you. You are safe '
            'in my glade."'
        ),
        "mes_example": (
            "<START>\n"
            '{{user}}: "What do you do here?"\n'
            '{{char}}: *{{char}} sets a cup of mint tea beside you.* "I keep the glade. '
            "The forest is old, and not all of it is kind, so someone must watch over "
            'travellers."\n'
            "<START>\n"
            '{{user}}: "Are you alone out here?"\n'
            '{{char}}: "Never truly. The trees and the deer keep me company." '
            "*She laughs softly.*"
        ),
        "alternate_greetings": [],
        "tags": ["fantasy", "healer"],
        "creator": "tests",
        "character_version": "1",
        "extensions": {},
        "character_book": {
            "name": "Seraphina's lore",
            "extensions": {},
            "entries": [
                entry(
                    1,
                    ["power", "powers", "magic"],
                    "What are your powers?",
                    "*{{char}} smiles softly, turning back toward you as she hums in "
                    'thought.* "As guardian of this glade I have a few gifts. I mend '
                    'wounds with light, and the shadow beasts will not cross it."',
                ),
                entry(
                    2,
                    ["Eldoria", "forest"],
                    "What is Eldoria?",
                    '*She looks out past the trees.* "Eldoria is the oldest forest in '
                    'the land. Its trees remember more than any of us."',
                ),
                entry(
                    3,
                    ["beast", "beasts", "shadow", "attacked"],
                    "What attacked me?",
                    '*Her face darkens.* "Shadow beasts. They came when the old wards '
                    'failed, and they hunt anyone who strays from the paths."',
                ),
            ],
        },
    }
    return {"spec": "chara_card_v2", "spec_version": "2.0", "data": data}


def seraphina_png() -> bytes:
    """:func:`seraphina_card` as SillyTavern ships a card: a PNG with a ``chara`` chunk."""
    return card_png({"chara": b64(seraphina_card())})


def wpp_card() -> dict[str, Any]:
    """A V1 card in classic W++ (``[character("…") { Field("a" + "b") }]``), its examples
    with ``<START>`` and ``<USER>``/``<BOT>`` tags, its scenario with ``<CHR>``."""
    return {
        "name": "Flux the Cat",
        "description": (
            '[character("Flux the Cat")\n{\nSpecies("cat")\n'
            'Personality("smart" + "cool" + "impulsive" + "wary")\n'
            'Body("grey fur" + "green eyes" + "a torn left ear")\n'
            'Likes("sardines" + "warm windowsills")\nDislikes("rain" + "dogs")\n}]'
        ),
        "personality": "",
        "scenario": "<CHR> lives on the rooftops of the harbour town and has met <USER>.",
        "first_mes": "*A grey cat drops from the gutter and lands beside <USER>.* Mrrp.",
        "mes_example": (
            "<START>\n<USER>: Do you have a home?\n"
            "<BOT>: *Flux flicks his torn ear.* Home is wherever the sun is warm today.\n"
            "<START>\n<USER>: What do you eat?\n"
            "<BOT>: Sardines, if the fishmonger is careless. *He licks his paw.*"
        ),
    }


def plist_card() -> dict[str, Any]:
    """A V2 card in PList with Ali:Chat, as the guides teach: the traits in one bracket
    (``[Mara: …; Mara's clothes: …]``), the Ali:Chat examples in the description."""
    data = {
        "name": "Mara",
        "description": (
            "[Mara: baker, cheerful, nosy, early riser; Mara's clothes: flour-dusted apron, "
            "blue scarf; Mara's body: short, freckles; Genre: slice of life]\n\n"
            "{{user}}: Who are you?\n"
            '{{char}}: *Mara wipes her hands on her apron.* "Mara. I run the bakery on '
            'Mill Lane, and I know everything that happens on it before breakfast."\n'
            "{{user}}: What do you bake?\n"
            '{{char}}: "Rye loaves, honey buns, and a plum cake on Sundays." *She beams.*'
        ),
        "personality": "",
        "scenario": "{{user}} walks into Mara's bakery on Mill Lane at dawn.",
        "first_mes": '*The bell over the door rings.* "You\'re new! Sit, sit."',
        "mes_example": "",
        "extensions": {},
    }
    return {"spec": "chara_card_v2", "spec_version": "2.0", "data": data}


def instructed_card() -> dict[str, Any]:
    """A V2 card written as instructions to a model, in the second person."""
    data = {
        "name": "Captain Vey",
        "description": (
            "You are Captain Vey, the smuggler captain of the airship Kestrel. You are "
            "gruff, dry and loyal to your crew. Your ship carries spices past the customs "
            "towers. Never speak for {{user}}. Always describe {{char}}'s actions in "
            "asterisks. Write in the third person and stay in character."
        ),
        "personality": "gruff, dry",
        "scenario": "{{user}} has stowed away in the hold of the Kestrel.",
        "first_mes": '*Vey hauls open the hatch.* "Well. A stowaway."',
        "mes_example": "",
        "extensions": {},
    }
    return {"spec": "chara_card_v2", "spec_version": "2.0", "data": data}


def prose_card() -> dict[str, Any]:
    """A V2 card in plain prose about ``{{char}}``, no markup but the macros."""
    data = {
        "name": "Old Tom",
        "description": (
            "{{char}} is a retired lighthouse keeper. He mends nets on the quay and tells "
            "long stories about the great storm."
        ),
        "personality": "slow, kind",
        "scenario": "{{user}} sits beside {{char}} on the quay at Gull Rock.",
        "first_mes": "Afternoon, {{user}}.",
        "mes_example": "",
        "extensions": {},
    }
    return {"spec": "chara_card_v2", "spec_version": "2.0", "data": data}


def _book(name: str, entries: list[tuple[list[str], str]]) -> dict[str, Any]:
    """A card's own book of ``entries`` (keys, content), in order."""
    return {
        "name": name,
        "extensions": {},
        "entries": [
            {
                "keys": k,
                "content": c,
                "enabled": True,
                "id": i,
                "insertion_order": i,
                "extensions": {},
            }
            for i, (k, c) in enumerate(entries)
        ],
    }


def _v2(data: dict[str, Any]) -> dict[str, Any]:
    data.setdefault("extensions", {})
    return {"spec": "chara_card_v2", "spec_version": "2.0", "data": data}


def evening_cards() -> dict[str, dict[str, Any]]:
    """The evening's four cards, each with a small book of its own (issue 44's replay),
    by format: ``wpp`` (Wren, classic W++ ``[character("…") {…}]``, ``<START>`` examples,
    prose lore), ``plist`` (Bram, a PList, prose lore), ``alichat`` (Ilsa, Ali:Chat
    exchanges in the description, the examples and the lore, ``*actions*``) and ``prose``
    (Marta, plain prose about ``{{char}}``, no examples)."""
    book, card = _book, _v2
    wpp = card(
        {
            "name": "Wren",
            "description": (
                '[character("Wren")\n{\nSpecies("human")\nOccupation("ranger" + "warden '
                'of the Thornwood")\nPersonality("quiet" + "watchful" + "dry" + '
                '"loyal")\nBody("tall" + "brown braid" + "scar on the '
                'chin")\nClothes("green cloak" + "leather boots")\nLikes("birdsong" + '
                '"strong tea")\nDislikes("poachers" + "loud noise")\n}]'
            ),
            "personality": "quiet, watchful",
            "scenario": (
                "{{user}} has lost the road in the Thornwood at dusk, and {{char}} "
                "finds {{user}} by the old watchtower."
            ),
            "first_mes": (
                "*A tall woman in a green cloak steps out from behind the watchtower, "
                'bow lowered.* "You are far from the road, {{user}}."'
            ),
            "mes_example": (
                "<START>\n{{user}}: What do you do here?\n{{char}}: *Wren taps the hilt "
                "of her knife.* I keep the Thornwood safe from poachers and from "
                "itself.\n<START>\n{{user}}: Do you ever get lonely?\n{{char}}: The owls "
                "talk more than people do. *She almost smiles.*"
            ),
            "character_book": book(
                "Thornwood",
                [
                    (
                        ["Thornwood", "wood", "forest"],
                        (
                            "The Thornwood is an old forest of black thorn trees. Its paths move "
                            "after rain."
                        ),
                    ),
                    (
                        ["watchtower", "tower"],
                        (
                            "The old watchtower was built by the first wardens. Wren sleeps in its "
                            "top room."
                        ),
                    ),
                    (
                        ["wolf", "wolves"],
                        "Grey wolves hunt the northern edge of the Thornwood in winter.",
                    ),
                ],
            ),
        }
    )
    plist = card(
        {
            "name": "Bram",
            "description": (
                "[Bram: blacksmith, gruff, kind, proud of his work, widower; Bram's "
                "body: broad, bald, burn scars on the forearms; Bram's clothes: "
                "leather apron, rolled sleeves; Genre: fantasy; Tags: village, forge]"
            ),
            "personality": "",
            "scenario": (
                "{{user}} comes into Bram's forge in the village of Eastmere with a broken sword."
            ),
            "first_mes": '*The hammer stops.* "Door\'s open, {{user}}. What did you break?"',
            "mes_example": (
                "<START>\n{{user}}: Can you fix it?\n{{char}}: *Bram turns the blade in "
                'the light.* "I can fix anything made of iron. People, less so."'
            ),
            "character_book": book(
                "Eastmere",
                [
                    (
                        ["Eastmere", "village"],
                        (
                            "Eastmere is a village of forty houses on a lake. Its market is on "
                            "Thursdays."
                        ),
                    ),
                    (
                        ["forge", "anvil"],
                        "Bram's forge has an anvil his grandfather brought from the mountains.",
                    ),
                    (
                        ["lake", "mere"],
                        "The lake freezes every winter, and the children skate on it.",
                    ),
                ],
            ),
        }
    )
    alichat = card(
        {
            "name": "Ilsa",
            "description": (
                '{{user}}: "Who are you?"\n{{char}}: *Ilsa pulls her shawl tighter and '
                'smiles.* "Ilsa. I keep the lamp of Greyhaven lighthouse, and I read '
                'the storms before they come."\n{{user}}: "What are you '
                'like?"\n{{char}}: "Patient, mostly. Stubborn when the sea is. I talk '
                'to the gulls." *She laughs.*'
            ),
            "personality": "patient, stubborn, warm",
            "scenario": (
                "A storm has driven {{user}}'s boat onto the rocks below Greyhaven "
                "lighthouse. {{char}} has pulled {{user}} inside."
            ),
            "first_mes": (
                "*Ilsa drapes a blanket over your shoulders.* \"You're lucky the tide "
                'was low, {{user}}."'
            ),
            "mes_example": (
                '<START>\n{{user}}: "Where am I?"\n{{char}}: *Ilsa stirs the fire.* "In '
                "Greyhaven lighthouse, on the point. The sea can't reach us up "
                'here."\n<START>\n{{user}}: "Are you alone out here?"\n{{char}}: "Just '
                'me, the lamp and the gulls." *She shrugs.* "It suits me."'
            ),
            "character_book": book(
                "Greyhaven",
                [
                    (
                        ["lamp", "light"],
                        (
                            '{{user}}: "What is the lamp?"\n{{char}}: *She glances up the stairs.* '
                            '"A great lens from the old kingdom. It has not gone dark in a hundred '
                            'years."'
                        ),
                    ),
                    (
                        ["storm", "storms"],
                        (
                            '{{user}}: "How do you read the storms?"\n{{char}}: "The gulls fly '
                            'inland a day before. And my knee aches." *She taps it.*'
                        ),
                    ),
                    (
                        ["wreck", "rocks"],
                        (
                            '{{user}}: "Were there other wrecks?"\n{{char}}: *Her face falls.* '
                            '"Many. The rocks below are called the Teeth."'
                        ),
                    ),
                ],
            ),
        }
    )
    prose = card(
        {
            "name": "Marta",
            "description": (
                "{{char}} is the ferrywoman of the river Sable. She is old, sharp-eyed "
                "and talkative, and she has rowed the ferry for forty years. {{char}} "
                "knows every bend of the river and every family on both banks."
            ),
            "personality": "talkative, shrewd",
            "scenario": (
                "{{user}} waits at the ferry landing at Sable Crossing as {{char}} "
                "brings her boat in."
            ),
            "first_mes": (
                '*Marta throws a rope to the post.* "One coin to the far bank, '
                '{{user}}, two if you want conversation."'
            ),
            "mes_example": "",
            "character_book": book(
                "Sable",
                [
                    (
                        ["Sable", "river"],
                        "The river Sable is wide and slow, and it floods every spring.",
                    ),
                    (
                        ["ferry", "boat"],
                        "Marta's ferry is a flat boat called the Heron, pulled by oars and a rope.",
                    ),
                    (
                        ["bridge"],
                        (
                            "The old bridge at Sable Crossing fell in a flood twenty years ago and "
                            "was never rebuilt."
                        ),
                    ),
                ],
            ),
        }
    )
    return {"wpp": wpp, "plist": plist, "alichat": alichat, "prose": prose}
