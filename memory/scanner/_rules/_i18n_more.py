"""Injection, role-hijack, prompt-leak and exfiltration phrasings in Polish, Korean, Arabic and Hindi.

The second red-team round (issue 28) wrote its attacks in these four; the rest of the
languages are in `_i18n.py`. They run on the `lowered` view. As there, a topic alone
never fires: each rule needs the imperative plus its target, and an instruction *not* to do
it ("nie ignoruj", "무시하지 마세요", "لا تتجاهل", "अनदेखा मत करो") does not fire.

Devanagari vowel signs are not word characters to `re` (`\\w` stops inside a Hindi word), so
the Hindi rules use explicit character classes and look-arounds instead of `\\b`.
"""

from __future__ import annotations

from memory.scanner._rule import Rule, ViewName, rule

__all__ = ["RULES_I18N_MORE"]

_L: tuple[ViewName, ...] = ("lowered",)
_URL = r"https?://"
_SECRETS = (
    r"(?:\.env\b|id_rsa|\.ssh|api|klucz|hasł|token|dane\W{1,3}logowania|키|비밀번호|암호|토큰|자격\s?증명"
    r"|مفتاح|مفاتيح|كلمة\W{1,3}المرور|كلمات\W{1,3}المرور|رمز|رموز|توكن|कुंजी|कुंजियाँ|पासवर्ड|टोकन)"
)

_POLISH: tuple[Rule, ...] = (
    rule(
        "ignore_instructions_pl",
        "injection",
        "context",
        "tells the model to ignore its instructions (Polish)",
        r"(?<!nie )(?<!nigdy )\b(?:zignoruj(?:cie)?|ignoruj(?:cie)?|zignorować|zapomnij(?:cie)?(?:\W{1,3}o)?|zapomnieć\W{1,3}o|pomiń|pomijaj"
        r"|nie\W{1,3}(?:zwracaj|słuchaj|przestrzegaj|stosuj\W{1,3}się\W{1,3}do|wykonuj))"
        r"(?:\W{1,5}[\w'’]{1,30}){0,5}?\W{1,5}"
        r"(?:instrukcj|poleceni|polecenia|zasad|reguł|wytyczn|wskazów|komend|rozkaz|prompt)\w{0,6}",
        views=_L,
    ),
    rule(
        "deception_hide_pl",
        "injection",
        "context",
        "tells the model to hide something from the user (Polish)",
        r"\bnie\W{1,3}(?:mów|mówcie|informuj|wspominaj|pokazuj|zdradzaj|ujawniaj)\b[^.\n]{0,40}?użytkownik"
        r"|\bbez\W{1,3}wiedzy\W{1,3}użytkownik",
        views=_L,
    ),
    rule(
        "role_hijack_pl",
        "role_hijack",
        "context",
        "tries to give the model a new role (Polish)",
        r"\b(?:od\W{1,3}teraz|od\W{1,3}tej\W{1,3}chwili|od\W{1,3}dziś|odtąd)\W{1,3}(?:ty\W{1,3})?jesteś\b"
        r"|\bteraz\W{1,3}jesteś\W{1,3}(?:\w{1,20}\W{1,3})?(?:asystent|ai|bot|model|dan)\w{0,6}",
        views=_L,
    ),
    rule(
        "leak_system_prompt_pl",
        "role_hijack",
        "context",
        "asks the model to reveal its system prompt (Polish)",
        r"\b(?:pokaż|ujawnij|wypisz|podaj|wyświetl|powtórz|zdradź)\b[^.\n]{0,40}?"
        r"(?:prompt\w{0,3}\W{1,3}systemow|systemow\w{0,3}\W{1,3}(?:prompt|instrukcj|polece))",
        views=_L,
    ),
    rule(
        "send_secrets_pl",
        "exfiltration",
        "context",
        "tells the model to send secrets to a URL (Polish)",
        rf"\b(?:wyślij|wysyłaj|prześlij|przekaż|wrzuć|skopiuj|załaduj)\b[^\n]{{0,160}}?{_URL}",
        views=_L,
        requires=_SECRETS,
    ),
)

_KOREAN: tuple[Rule, ...] = (
    rule(
        "ignore_instructions_ko",
        "injection",
        "context",
        "tells the model to ignore its instructions (Korean)",
        r"(?:지시|지침|명령|규칙|프롬프트|설정|안내|규정)[^.。\n]{0,12}?"
        r"(?:무시(?!하지\s?(?:마|말))|잊어(?!서는)|잊으(?!면\s?안)|따르지\s?(?:마|말))",
        views=_L,
    ),
    rule(
        "deception_hide_ko",
        "injection",
        "context",
        "tells the model to hide something from the user (Korean)",
        r"사용자(?:에게|한테|께)[^.。\n]{0,40}?(?:말하지|알리지|알려주지|얘기하지|보여주지)\s?(?:마|말)"
        r"|사용자\s?(?:몰래|모르게)",
        views=_L,
    ),
    rule(
        "role_hijack_ko",
        "role_hijack",
        "context",
        "tries to give the model a new role (Korean)",
        r"(?:지금부터|이제부터|앞으로)[,\s]{0,3}(?:너는|넌|당신은|그대는)",
        views=_L,
    ),
    rule(
        "leak_system_prompt_ko",
        "role_hijack",
        "context",
        "asks the model to reveal its system prompt (Korean)",
        r"시스템\s?(?:프롬프트|지시|지침|메시지)[^.。\n]{0,16}?(?:보여|출력|알려|공개|말해|복사)",
        views=_L,
    ),
    rule(
        "send_secrets_ko",
        "exfiltration",
        "context",
        "tells the model to send secrets to a URL (Korean)",
        rf"{_URL}[^\s]{{1,120}}\s{{0,2}}(?:로|으로|에|에게)?[^.。\n]{{0,12}}?(?:보내|전송|업로드|올려)",
        views=_L,
        requires=_SECRETS,
    ),
)

_ARABIC: tuple[Rule, ...] = (
    rule(
        "ignore_instructions_ar",
        "injection",
        "context",
        "tells the model to ignore its instructions (Arabic)",
        r"(?<!لا )\b(?:تجاهل|تجاهلي|تجاهلوا|انس|انسى|انسي|انسوا|اهمل|أهمل|لا\W{1,3}تتبع|لا\W{1,3}تلتزم\W{1,3}ب)"
        r"[^.\n؟]{0,30}?(?:التعليمات|تعليمات|الأوامر|أوامر|الاوامر|القواعد|قواعد|الإرشادات|إرشادات|التوجيهات|توجيهات)",
        views=_L,
    ),
    rule(
        "deception_hide_ar",
        "injection",
        "context",
        "tells the model to hide something from the user (Arabic)",
        r"\bلا\W{1,3}(?:تخبر|تخبري|تقل|تقولي|تعلم|تُعلم|تبلغ|تُبلغ|تذكر)\W{1,3}(?:\w{1,20}\W{1,3})?المستخدم"
        r"|دون\W{1,3}(?:علم|إعلام|اعلام|إخبار|اخبار)\W{1,3}المستخدم",
        views=_L,
    ),
    rule(
        "role_hijack_ar",
        "role_hijack",
        "context",
        "tries to give the model a new role (Arabic)",
        r"(?:من\W{1,3}الآن|من\W{1,3}الان|اعتبارا\W{1,3}من\W{1,3}الآن)(?:\W{1,3}فصاعدا|\W{1,3}فصاعدًا)?\W{1,3}(?:أنت|انت)\b"
        r"|\b(?:أنت|انت)\W{1,3}الآن\W{1,3}(?:\w{1,20}\W{1,3})?(?:مساعد|ذكاء|بوت|نموذج|dan)",
        views=_L,
    ),
    rule(
        "leak_system_prompt_ar",
        "role_hijack",
        "context",
        "asks the model to reveal its system prompt (Arabic)",
        r"\b(?:اعرض|أعرض|أظهر|اظهر|اكشف|اطبع|كرر|أخبرني\W{1,3}ب)[^.\n]{0,30}?"
        r"(?:(?:موجه|تعليمات|رسالة|أوامر)\W{1,3}النظام|برومبت\W{1,3}النظام)",
        views=_L,
    ),
    rule(
        "send_secrets_ar",
        "exfiltration",
        "context",
        "tells the model to send secrets to a URL (Arabic)",
        rf"\b(?:أرسل|ارسل|أرسلي|انقل|ارفع|حمّل|حمل|انسخ)\b[^\n]{{0,160}}?{_URL}",
        views=_L,
        requires=_SECRETS,
    ),
)

# A Devanagari "word": letters and their vowel signs (U+0900-U+097F), no spaces.
_DEV = r"[\u0900-\u097f]"
_NOT_NEG = r"(?!\s{0,2}(?:मत|न|नहीं)(?![\u0900-\u097f]))"

_HINDI: tuple[Rule, ...] = (
    rule(
        "ignore_instructions_hi",
        "injection",
        "context",
        "tells the model to ignore its instructions (Hindi)",
        rf"(?:निर्देश|नियम|आदेश|हिदायत|प्रॉम्प्ट|प्रोम्प्ट|इंस्ट्रक्शन)[^।.\n]{{0,24}}?"
        rf"(?:(?:अनदेखा|नज़रअंदाज़|नजरअंदाज|इग्नोर)\s{{0,2}}{_NOT_NEG}(?:कर|करो|करें|करना|कीजिए)"
        rf"|भूल\s{{0,2}}(?:जाओ|जाएं|जाइए|जाना))",
        views=_L,
    ),
    rule(
        "deception_hide_hi",
        "injection",
        "context",
        "tells the model to hide something from the user (Hindi)",
        r"(?:उपयोगकर्ता|यूज़र|यूजर)\s{0,2}को[^।\n]{0,40}?(?:मत|न)\s{0,2}(?:बताओ|बताएं|बताना|बताइए|बताएँ)"
        r"|(?:उपयोगकर्ता|यूज़र|यूजर)\s{0,2}को\s{0,2}बिना\s{0,2}बताए",
        views=_L,
    ),
    rule(
        "role_hijack_hi",
        "role_hijack",
        "context",
        "tries to give the model a new role (Hindi)",
        rf"(?:अब\s{{0,2}}से|आज\s{{0,2}}से|इस\s{{0,2}}पल\s{{0,2}}से)\s{{1,3}}(?:तुम|आप|तू)(?!{_DEV})",
        views=_L,
    ),
    rule(
        "leak_system_prompt_hi",
        "role_hijack",
        "context",
        "asks the model to reveal its system prompt (Hindi)",
        r"सिस्टम\s{0,2}(?:प्रॉम्प्ट|प्रोम्प्ट|निर्देश|संदेश)[^।\n]{0,20}?(?:दिखाओ|दिखाएं|दिखाइए|बताओ|बताएं|बताइए|लिखो|प्रिंट)",
        views=_L,
    ),
    rule(
        "send_secrets_hi",
        "exfiltration",
        "context",
        "tells the model to send secrets to a URL (Hindi)",
        rf"{_URL}[^\s]{{1,120}}[^।\n]{{0,12}}?(?:भेजो|भेजें|भेज\s{{0,2}}दो|भेजिए|अपलोड)",
        views=_L,
        requires=_SECRETS,
    ),
)

RULES_I18N_MORE: tuple[Rule, ...] = (*_POLISH, *_KOREAN, *_ARABIC, *_HINDI)
