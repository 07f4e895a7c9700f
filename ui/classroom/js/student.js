// The student's phone: pick a commute, randomise it here, show what will be sent, send only that.
//
// Streamlit v2 component (ui/classroom/component.py). Everything from the server arrives in
// `data`; zone names are untrusted and only ever set as textContent, never as HTML. Only the
// report leaves through setTriggerValue("report"); the true cell leaves only through the separate
// "reveal" button, when the teacher allowed it and the student presses it. Each message echoes
// the page's single-use `data.nonce`, which is how the server knows which round it answers.
// Every list ends with "None of these": choosing it in either list answers the question's last
// cell (spec.d − 1), the commute the teacher did not list.

function dpElement(tag, className, text) {
  const element = document.createElement(tag);
  if (className) element.className = className;
  if (text !== undefined) element.textContent = text;
  return element;
}

function dpSentKey(data) {
  return `dp-classroom:${data.room}:${data.spec.round}`;
}

function dpRemembered(data) {
  try {
    return window.localStorage.getItem(dpSentKey(data)) === "sent";
  } catch (error) {
    return false; // storage blocked (private window): the server's per-session check still holds
  }
}

function dpRemember(data) {
  try {
    window.localStorage.setItem(dpSentKey(data), "sent");
  } catch (error) {
    // nothing to do: see dpRemembered
  }
}

// Memoization (classroom/repeated.py): in a memoized round the phone keeps the first report it
// sends for this room and kind of round (spec.memo, the server's key of the question asked and
// how: mechanism, ε, a coins or number round's prompt and bound) and sends that same report in
// every later memoized round of that kind, so linking the rounds reveals nothing more. Only the
// report is kept, never the answer.
function dpMemoKey(data) {
  return `dp-classroom-memo:${data.room}:${data.spec.memo}`;
}

function dpRecalled(data) {
  try {
    const kept = window.localStorage.getItem(dpMemoKey(data));
    return kept === null ? null : JSON.parse(kept);
  } catch (error) {
    return null; // storage blocked or damaged: draw afresh (the round then spends ε again)
  }
}

function dpKeep(data, report) {
  try {
    window.localStorage.setItem(dpMemoKey(data), JSON.stringify(report));
  } catch (error) {
    // nothing to do: see dpRecalled
  }
}

function dpSelect(label, names, testId) {
  const wrapper = dpElement("label", "dp-field", label);
  const select = dpElement("select");
  select.dataset.testid = testId;
  names.forEach((name, index) => {
    const option = dpElement("option", null, name);
    option.value = String(index);
    select.appendChild(option);
  });
  const none = dpElement("option", null, "None of these");
  none.value = "-1";
  select.appendChild(none);
  wrapper.appendChild(select);
  return [wrapper, select];
}

// The server's answer to a coins or number report, on the next run: say it, remember a kept one.
function dpSentUpdate(status) {
  return (next) => {
    if (next.sent) {
      status.textContent = next.sent.message;
      if (next.sent.ok) dpRemember(next);
    }
  };
}

// A memoized round whose report this phone kept: show it and offer to send it again, nothing
// else (no new tap or answer is asked). True when it took over the round.
function dpResend(root, data, setTriggerValue, status) {
  const kept = data.spec.memoize ? dpRecalled(data) : null;
  if (!kept) return false;
  const note = dpElement("p", "dp-memo",
    "Memoized round: your phone sends the SAME report it sent in an earlier round of this " +
    "question (kept in this browser), not a new one — repeating it tells nothing new about you.");
  note.dataset.memoized = "reused";
  const sent = dpElement("pre", "dp-sent", JSON.stringify(kept));
  const send = dpElement("button", "dp-primary", "Send the same report again");
  root.append(note, sent, send, status);
  send.addEventListener("click", () => {
    setTriggerValue("report", { report: kept, nonce: data.nonce });
    send.disabled = true;
    status.textContent = "Sending…";
  });
  root.dpUpdate = dpSentUpdate(status);
  return true;
}

// Coins mode (classroom/coins.py): the student flips two real coins and taps what they say; the
// phone draws nothing and sends only that yes (1) or no (0). Memoized: the first tap is kept
// and sent again in later memoized rounds of the same question.
function dpBuildCoins(root, data, setTriggerValue) {
  const yes = dpElement("button", "dp-primary", "The coins say YES");
  const no = dpElement("button", "dp-primary", "The coins say NO");
  const status = dpElement("p", "dp-status");
  root.append(yes, no, status);
  const finished = (message) => {
    yes.disabled = no.disabled = true;
    status.textContent = message;
  };
  if (data.alreadySent || dpRemembered(data)) {
    finished("This browser has already sent a report in this round. Wait for the next round.");
    return;
  }
  if (dpResend(root, data, setTriggerValue, status)) {
    yes.remove();
    no.remove();
    return;
  }
  [[yes, 1], [no, 0]].forEach(([button, answer]) => {
    button.addEventListener("click", () => {
      if (data.spec.memoize) dpKeep(data, { y: answer });
      setTriggerValue("report", { report: { y: answer }, nonce: data.nonce });
      finished("Sending…");
    });
  });
  root.dpUpdate = dpSentUpdate(status);
}

// A number question: the value stays on the phone; one randomised bit is sent. Memoized: the
// first bit is kept and sent again in later memoized rounds of the same question and range.
function dpBuildNumber(root, data, setTriggerValue) {
  const spec = data.spec;
  if (!(data.alreadySent || dpRemembered(data))
      && dpResend(root, data, setTriggerValue, dpElement("p", "dp-status"))) return;
  const field = dpElement("label", "dp-field", `Your answer (0 to ${spec.bound})`);
  const input = dpElement("input");
  input.type = "number";
  input.min = "0";
  input.max = String(spec.bound);
  input.dataset.testid = "dp-number";
  field.appendChild(input);
  const draw = dpElement("button", "dp-primary", "Randomise on this phone");
  const steps = dpElement("ol", "dp-steps");
  const sent = dpElement("pre", "dp-sent");
  const send = dpElement("button", "dp-primary", "Send this report");
  const status = dpElement("p", "dp-status");
  sent.hidden = send.hidden = true;
  root.append(field, draw, steps, sent, send, status);
  let report = null;
  const finished = (message) => {
    input.disabled = draw.disabled = send.disabled = true;
    status.textContent = message;
  };
  if (data.alreadySent || dpRemembered(data)) {
    finished("This browser has already sent a report in this round. Wait for the next round.");
    return;
  }
  draw.addEventListener("click", () => {
    const value = Math.min(Math.max(Number(input.value) || 0, 0), spec.bound);
    report = dpRandomisers.number(spec, value);
    const chance = 0.5 + (2 * value / spec.bound - 1) * spec.slope;
    steps.replaceChildren(
      dpElement("li", null, `Your answer: ${value} (clamped to 0–${spec.bound}). ` +
        "It stays on this phone."),
      dpElement("li", null, `Your phone draws 1 with probability ${(100 * chance).toFixed(0)} %` +
        ` (more likely the larger your answer), else 0: it drew ${report.y}.`),
      dpElement("li", null, "Your phone will send exactly this, and nothing else:"));
    sent.textContent = JSON.stringify(report);
    input.disabled = draw.disabled = true;
    sent.hidden = send.hidden = false;
  });
  send.addEventListener("click", () => {
    if (spec.memoize) dpKeep(data, report);
    setTriggerValue("report", { report, nonce: data.nonce });
    finished("Sending…");
  });
  root.dpUpdate = dpSentUpdate(status);
}

function dpBuild(root, data, setTriggerValue) {
  const spec = data.spec;
  if (spec.mechanism === "number") {
    dpBuildNumber(root, data, setTriggerValue);
    return;
  }
  if (spec.mechanism === "coins") {
    dpBuildCoins(root, data, setTriggerValue);
    return;
  }
  const [homeField, home] = dpSelect("Where do you live?", data.origins, "dp-home");
  const [workField, work] = dpSelect("Where do you work or study?", data.destinations, "dp-work");
  const draw = dpElement("button", "dp-primary", "Randomise on this phone");
  const steps = dpElement("ol", "dp-steps");
  const sent = dpElement("pre", "dp-sent");
  const send = dpElement("button", "dp-primary", "Send this report");
  const status = dpElement("p", "dp-status");
  const reveal = dpElement("button", "dp-reveal", "Also send my TRUE answer (not private)");
  sent.hidden = send.hidden = reveal.hidden = true;
  root.append(homeField, workField, draw, steps, sent, send, status, reveal);

  let item = null;
  let report = null;
  const finished = (message) => {
    home.disabled = work.disabled = draw.disabled = send.disabled = true;
    status.textContent = message;
  };
  if (data.alreadySent || dpRemembered(data)) {
    finished("This browser has already sent a report in this round. Wait for the next round.");
    return;
  }

  draw.addEventListener("click", () => {
    const listed = Number(home.value) >= 0 && Number(work.value) >= 0;
    item = listed ? Number(home.value) * data.destinations.length + Number(work.value)
      : spec.d - 1;
    const kept = spec.memoize ? dpRecalled(data) : null;
    report = kept || dpRandomisers[spec.mechanism](spec, item);
    if (spec.memoize && !kept) dpKeep(data, report);
    const commute = listed
      ? `${data.origins[home.value]} → ${data.destinations[work.value]}` : data.noneLabel;
    const outcome = kept
      ? "Memoized round: your phone sends the SAME report it drew in an earlier round (kept " +
        "in this browser), not a new draw — repeating it tells nothing new about you."
      : dpOutcome(spec, item, report) + (spec.memoize
        ? " This phone keeps this report and sends it again in later memoized rounds." : "");
    steps.replaceChildren(
      dpElement("li", null, `Your commute: ${commute} (cell #${item} of ${spec.d}). ` +
        "It stays on this phone."),
      dpElement("li", null, outcome),
      dpElement("li", null, "Your phone will send exactly this, and nothing else:"));
    steps.dataset.memoized = kept ? "reused" : (spec.memoize ? "kept" : "fresh");
    sent.textContent = JSON.stringify(report);
    home.disabled = work.disabled = draw.disabled = true;
    sent.hidden = send.hidden = false;
  });

  send.addEventListener("click", () => {
    setTriggerValue("report", { report, nonce: data.nonce });
    finished("Sending…");
  });

  reveal.addEventListener("click", () => {
    setTriggerValue("reveal", { cell: item, nonce: data.nonce });
    reveal.disabled = true;
  });

  // The server's answer arrives as new data on the next run: say it, remember an accepted report.
  root.dpUpdate = (next) => {
    if (next.sent) {
      status.textContent = next.sent.message;
      if (next.sent.ok) dpRemember(next);
      reveal.hidden = !(next.sent.ok && next.reveal);
    }
    if (next.revealed) {
      reveal.disabled = true;
      reveal.textContent = next.revealed;
    }
  };
}

export default function (component) {
  const { data, parentElement, setTriggerValue } = component;
  const signature = `${data.room}:${data.spec.round}`;
  let root = parentElement.querySelector(".dp-student");
  if (!root || root.dataset.signature !== signature) {
    if (root) root.remove();
    root = dpElement("div", "dp-student");
    root.dataset.signature = signature;
    parentElement.appendChild(root);
    dpBuild(root, data, setTriggerValue);
  }
  if (root.dpUpdate) root.dpUpdate(data);
  return undefined;
}
