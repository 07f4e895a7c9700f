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

function dpBuild(root, data, setTriggerValue) {
  const spec = data.spec;
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
    report = dpRandomisers[spec.mechanism](spec, item);
    const commute = listed
      ? `${data.origins[home.value]} → ${data.destinations[work.value]}` : data.noneLabel;
    steps.replaceChildren(
      dpElement("li", null, `Your commute: ${commute} (cell #${item} of ${spec.d}). ` +
        "It stays on this phone."),
      dpElement("li", null, dpOutcome(spec, item, report)),
      dpElement("li", null, "Your phone will send exactly this, and nothing else:"));
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
