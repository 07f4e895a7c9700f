"""Repeated rounds in Chromium, a phone at 390 px: with memoization the phone resends the report
it drew in the first round (kept in its browser storage) and the teacher's screen says each
student's total ε; a round drawn fresh draws again."""

import re

import pytest
from playwright.sync_api import Page, expect

from tests.browser.test_classroom_browser import PHONE, metric, no_traceback, open_room, settled

pytestmark = pytest.mark.browser


def answer(phone: Page, number: int) -> str:
    """Randomise and send on the phone in round ``number``; the report it sent, as shown."""
    expect(phone.get_by_text(re.compile(rf"round {number} · "))).to_be_visible(timeout=30_000)
    phone.get_by_role("button", name="Randomise on this phone").click()
    sent = phone.locator("pre.dp-sent")
    expect(sent).to_be_visible()
    report = sent.inner_text()
    phone.get_by_role("button", name="Send this report").click()
    expect(phone.get_by_text("Sent: report number 1").first).to_be_visible()
    return report


def test_a_memoized_phone_resends_its_first_report_and_a_fresh_round_draws_again(
        page: Page, app_url, browser):
    page.goto(f"{app_url}/Classroom")
    page.get_by_text("Memoize: in repeated rounds each phone resends its first report").click()
    code = open_room(page)
    context = browser.new_context(viewport=PHONE)
    phone = context.new_page()
    phone.goto(f"{app_url}/Classroom?room={code}")
    expect(phone.get_by_text("memoized: your phone resends its first report")).to_be_visible()
    first = answer(phone, 1)
    expect(phone.get_by_text("This phone keeps this report")).to_be_visible()

    page.get_by_text("change mechanism or ε (opens a new round)").click()
    page.get_by_role("button", name="Ask this round again").click()
    expect(page.get_by_text(re.compile(r"all 2 rounds has spent ε = [\d.]+ in this room: 2 "
                                       r"memoized rounds count once"))).to_be_visible()
    second = answer(phone, 2)
    expect(phone.get_by_text("Memoized round: your phone sends the SAME report")).to_be_visible()
    assert second == first
    expect(metric(page, "Reports in this round")).to_have_text("1", timeout=20_000)

    page.get_by_text("change mechanism or ε (opens a new round)").click()   # round 2's
    page.get_by_text("Memoize: in repeated rounds each phone resends its first report"
                     ).first.click()                  # the round form's (coins, number follow)
    page.get_by_role("button", name="Open a new round with these settings").click()
    expect(page.get_by_text(re.compile(r"all 3 rounds has spent ε = "))).to_be_visible()
    answer(phone, 3)
    expect(phone.get_by_text("Memoized round")).to_have_count(0)
    settled(phone)
    no_traceback(phone)
    no_traceback(page)
    context.close()


def test_coins_phones_send_only_what_the_coins_said_and_the_share_appears(page: Page, app_url,
                                                                          browser):
    page.goto(f"{app_url}/Classroom")
    code = open_room(page)
    page.get_by_text("change mechanism or ε (opens a new round)").click()
    page.get_by_label("Yes/no question").fill("Did you cycle today?")
    page.get_by_role("button", name="Open a coins round").click()
    expect(page.get_by_text("Coins round: Did you cycle today?")).to_be_visible()
    for tapped in ("YES", "YES", "NO"):
        context = browser.new_context(viewport=PHONE)
        phone = context.new_page()
        phone.goto(f"{app_url}/Classroom?room={code}")
        expect(phone.get_by_text("Did you cycle today?")).to_be_visible()
        expect(phone.get_by_text("Tails: flip a second coin")).to_be_visible()
        phone.get_by_role("button", name=f"The coins say {tapped}").click()
        expect(phone.get_by_text(re.compile(r"Sent: report number \d+")).first).to_be_visible()
        phone.reload()
        expect(phone.get_by_text("already sent a report in this round")).to_be_visible()
        expect(phone.get_by_role("button", name="The coins say YES")).to_be_disabled()
        no_traceback(phone)
        context.close()
    expect(metric(page, "Taps in this round")).to_have_text("3", timeout=20_000)
    expect(metric(page, "YES taps")).to_have_text("2")
    # 2 of 3: 2 × 0.67 − 0.5 = 0.83; Clopper–Pearson for p, mapped to q and clipped
    expect(page.get_by_text(re.compile(r"Estimated share answering yes: 83 % \(exact 95 % "
                                       r"interval \d+ %–100 %\)"))).to_be_visible()
    no_traceback(page)


def test_a_number_question_sends_one_bit_and_the_average_appears(page: Page, app_url, browser):
    page.goto(f"{app_url}/Classroom")
    code = open_room(page)
    page.get_by_text("change mechanism or ε (opens a new round)").click()
    page.get_by_role("button", name="Open a number round").click()
    expect(page.get_by_text("Number round: How many minutes is your commute")).to_be_visible()
    context = browser.new_context(viewport=PHONE)
    phone = context.new_page()
    phone.goto(f"{app_url}/Classroom?room={code}")
    expect(phone.get_by_text("One bit (Duchi et al.'s mean estimation)")).to_be_visible()
    phone.locator("input[data-testid='dp-number']").fill("35")
    phone.get_by_role("button", name="Randomise on this phone").click()
    expect(phone.get_by_text("Your answer: 35 (clamped to 0–120)")).to_be_visible()
    sent = phone.locator("pre.dp-sent").inner_text()
    assert sent in ('{"y":0}', '{"y":1}')                     # one bit, never the 35
    phone.get_by_role("button", name="Send this report").click()
    expect(phone.get_by_text("Sent: report number 1").first).to_be_visible()
    no_traceback(phone)
    context.close()
    expect(metric(page, "Reports in this round")).to_have_text("1", timeout=20_000)
    expect(page.get_by_text(re.compile(r"Estimated class average: \d+\.\d \(exact 95 % "
                                       r"interval 0\.0–120\.0\)"))).to_be_visible()
    no_traceback(page)


def test_the_class_guesses_first_then_sees_guess_estimate_and_truth(page: Page, app_url,
                                                                    browser):
    page.goto(f"{app_url}/Classroom")
    code = open_room(page)
    page.get_by_text("change mechanism or ε (opens a new round)").click()
    page.get_by_label("Yes/no question", exact=True).fill("Did you walk today?")
    page.get_by_role("button", name="Open a coins round").click()
    page.get_by_text("Guess first: the class's guess").click()
    page.get_by_label("The class's guess (%)").fill("40")
    page.get_by_role("button", name="Save").click()
    expect(page.get_by_text("Before and after (%)")).to_be_visible()
    context = browser.new_context(viewport=PHONE)
    phone = context.new_page()
    phone.goto(f"{app_url}/Classroom?room={code}")
    phone.get_by_role("button", name="The coins say YES").click()
    expect(phone.get_by_text("Sent: report number 1").first).to_be_visible()
    context.close()
    expect(metric(page, "Taps in this round")).to_have_text("1", timeout=20_000)
    page.get_by_label("The truth, if you know it (%)").fill("60")
    page.get_by_role("button", name="Save").click()
    expect(page.get_by_text("The truth is inside the estimate's 95 % interval.")).to_be_visible()
    no_traceback(page)


def test_a_room_opened_on_memoized_coins_resends_the_tap_and_the_teacher_sees_it_linked(
        page: Page, app_url, browser):
    """Issue 38: a room whose first round is a memoized coins question, with join codes. The
    phone (390 px) taps once; in the repeated round it offers only to resend that tap; the
    teacher's live linking panel counts the code's two identical reports."""
    page.goto(f"{app_url}/Classroom")
    page.get_by_text("A yes/no question with two coins", exact=True).click()
    page.get_by_label("Yes/no question", exact=True).fill("Did you cycle today?")
    page.get_by_text("Memoize: in repeated rounds each phone resends its first report").click()
    page.get_by_text("One-time join codes", exact=True).click()
    code = open_room(page)
    expect(page.get_by_text("Coins round: Did you cycle today?")).to_be_visible()
    page.get_by_text(re.compile(r"Join codes \(\d+\): hand one to each student")).click()
    joined = page.locator("table").filter(has_text="last used in round").locator(
        "tbody tr").first.locator("td").nth(1).inner_text().strip()

    context = browser.new_context(viewport=PHONE)
    phone = context.new_page()
    phone.goto(f"{app_url}/Classroom?room={code}")
    box = phone.get_by_label("Your join code (from your teacher)")
    box.fill(joined)
    box.press("Enter")
    expect(phone.get_by_text("memoized: your phone resends its first report")).to_be_visible()
    phone.get_by_role("button", name="The coins say YES").click()
    expect(phone.get_by_text("Sent: report number 1").first).to_be_visible()

    page.get_by_text("change mechanism or ε (opens a new round)").click()
    page.get_by_role("button", name="Ask this round again").click()
    expect(phone.get_by_text(re.compile(r"round 2 · "))).to_be_visible(timeout=30_000)
    expect(phone.get_by_text("Memoized round: your phone sends the SAME report")).to_be_visible()
    expect(phone.get_by_role("button", name="The coins say YES")).to_have_count(0)
    assert phone.locator("pre.dp-sent").inner_text() == '{"y":1}'
    phone.get_by_role("button", name="Send the same report again").click()
    expect(phone.get_by_text("Sent: report number 1").first).to_be_visible()
    settled(phone)
    no_traceback(phone)
    context.close()

    expect(metric(page, "Taps in this round")).to_have_text("1", timeout=20_000)
    page.get_by_text("Live: what linking reports by join code gives an attacker").click()
    expect(page.get_by_text(re.compile(r"1 join code\(s\) sent reports in the 2 memoized rounds "
                                       r".* guess for 0 of them; 1 sent the same report every "
                                       r"time"))).to_be_visible(timeout=20_000)
    expect(page.get_by_text(re.compile(r"all 2 rounds has spent ε = 1\.1 in this room"))
           ).to_be_visible()
    no_traceback(page)
