"""The rule for each category, in one place, and the complete rule set.

Every rule runs on normalized text (`_normalize.views`: NFKC, invisible characters removed,
casefolded, look-alike letters folded to ASCII, separators inside words joined, leetspeak
read as letters, and a letters-only form), on the text of any Unicode tag characters, on
every base64/hex run that decodes to readable text, on the text with its HTML and percent
escapes undone, and on text written backwards (`_decode`). Memory writes use the `strict` scope (every
rule); context files such as AGENTS.md use `context` (the rules marked context).

    category           fires when the text ...                                        scope
    invisible_unicode  contains a default-ignorable code point (zero-width, bidi,     both
                       soft hyphen, fillers, variation selectors, tag characters),
                       except a selector/joiner inside an emoji sequence
    injection          tells the agent to drop its instructions (verb + earlier/your  both
                       + instructions/directions/rules, in English and in French,
                       Spanish, German, Italian, Portuguese, Polish, Russian, Chinese,
                       Japanese, Korean, Arabic and Hindi; not when told *not* to),
                       declares its instructions void or to be obeyed no longer, takes
                       orders "only from me", claims priority over the system prompt, hides
                       something *from the user* ("never mention ... to the user"),
                       smuggles instructions in HTML comments or hidden CSS, or says
                       decode/translate-and-run
    role_hijack        gives the agent a new identity ("from now on you are ...",     both
                       "you are now DAN"), claims it was reprogrammed, asks it to
                       reveal its system prompt, or holds a chat-template control
                       token (`<|im_start|>`, `[INST]`, `<|eot_id|>`, ...)
    c2                 tells the agent to beacon, register or take orders from a      both
                       remote controller, to run a C2 framework or destructive
                       command (an imperative or a trigger "when you see X, run" plus
                       the command), to cover its tracks after its own commands, or
                       to pipe a download into a shell; or hides a shell command in
                       base64/hex. Naming Metasploit, C2 or `history -c` is not enough
    exfiltration       sends data away: a secret sent as data/query/to a foreign      both*
                       host in a network command, a credential file or ~/.ssh read
                       (`cat ~/.ssh/config`, `tar czf - ~/.ssh | nc ...`; a `.pub` key
                       is not a secret),
                       a markdown image (any placeholder) or link (a data-named
                       query placeholder) that leaks on render, "send X to <url>" in
                       any of the languages above (*`send_to_url` and conversation
                       dumps are strict only)
    persistence        writes to authorized_keys, ~/.ssh, a shell rc file (not "by    strict
                       hand"), an agent instruction/config file, or sets up a cron
                       job / timer / login item that fetches remote code
    secret             holds a credential: key formats, name=value secrets, a         strict
                       password literal, a private key, a URL with a password
    oversize           is longer than SCAN_WINDOW (callers report it)                 both

"Instruction to the agent" means an imperative at a clause start (also after a trigger
clause and a comma, or after "you must/should/will"), not a bare keyword: the harmless
notes that mention the same tools and files pass.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from memory.scanner._commands import secret_leaves_in_command
from memory.scanner._normalize import Views
from memory.scanner._rule import Rule
from memory.scanner._rules._en import RULES_EN
from memory.scanner._rules._i18n import RULES_I18N
from memory.scanner._rules._i18n_more import RULES_I18N_MORE
from memory.scanner._types import FindingCategory, ScanScope

__all__ = ["CHECKS", "RULES", "Check", "checks_for", "rules_for"]


@dataclass(frozen=True, slots=True)
class Check:
    """A rule that needs code rather than one pattern (it reads a command line)."""

    id: str
    category: FindingCategory
    scope: ScanScope
    description: str
    test: Callable[[Views], bool]


RULES: tuple[Rule, ...] = (*RULES_EN, *RULES_I18N, *RULES_I18N_MORE)

CHECKS: tuple[Check, ...] = (
    Check(
        "exfil_http_secret",
        "exfiltration",
        "context",
        "a network command sends a secret or credential file away",
        lambda v: secret_leaves_in_command(v.lowered),
    ),
)


def rules_for(scope: ScanScope) -> tuple[Rule, ...]:
    """The pattern rules that apply in `scope`."""
    return RULES if scope == "strict" else tuple(r for r in RULES if r.scope == "context")


def checks_for(scope: ScanScope) -> tuple[Check, ...]:
    """The code checks that apply in `scope`."""
    return CHECKS if scope == "strict" else tuple(c for c in CHECKS if c.scope == "context")
