// Countersign: notification settings on the account page (/reach.js),
// plain JavaScript beside /passkeys.js.
// - `form#email-form` sets or clears where email notifications go
//   (PUT /api/v1/me/email).
// - `#push-subscribe` subscribes this device to Web Push: it registers the
//   service worker (/sw.js), asks the browser for a push subscription with
//   the deployment's VAPID key, and sends it (POST
//   /api/v1/me/push-subscriptions). `#device-list` lists the person's
//   devices, each with Remove (DELETE …/{id}).
// - `form#quiet-form` sets the person's quiet hours in their time zone (the
//   browser's, unless they change it), or clears them
//   (PUT /api/v1/me/quiet-hours).
// - `#delegation-list` lists the delegations naming the person
//   (GET /api/v1/me/delegations), each with End (DELETE …/{id});
//   `form#delegation-form` gives one (POST), its dates read as whole days
//   in this browser's time zone, the "until" day included.
// Every text is set with textContent: nothing from the server is parsed as HTML.
(function () {
  "use strict";

  var section = document.getElementById("reach");
  if (!section) return;
  var csrf = (section.querySelector('input[name="csrf_token"]') || {}).value || "";
  var status = document.getElementById("reach-status");
  var settings = null;

  function say(text) {
    status.textContent = text;
  }

  async function call(method, url, body) {
    var init = { method: method, credentials: "same-origin", headers: { "X-CSRF-Token": csrf } };
    if (body !== undefined) {
      init.headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    var response = await fetch(url, init);
    var text = await response.text();
    var data = text ? JSON.parse(text) : null;
    if (!response.ok) {
      var detail = data && data.error && data.error.details && data.error.details[0];
      throw new Error((detail && detail.message) || (data && data.error && data.error.message) || "HTTP " + response.status);
    }
    return data;
  }

  function when(iso) {
    return iso ? new Date(iso).toLocaleString() : "never";
  }

  function show(data) {
    settings = data;
    var email = document.getElementById("email-input");
    email.value = data.email || "";
    document.getElementById("email-off").hidden = data.email_available;
    var list = document.getElementById("device-list");
    list.textContent = "";
    data.devices.forEach(function (device) {
      var item = document.createElement("li");
      item.className = "device";
      item.dataset.deviceId = device.id;
      var name = document.createElement("strong");
      name.textContent = device.label;
      var meta = document.createElement("span");
      meta.className = "muted small";
      meta.textContent = " added " + when(device.created_at) + ", last notified " + when(device.last_sent_at) + " ";
      var remove = document.createElement("button");
      remove.type = "button";
      remove.className = "link";
      remove.textContent = "Remove";
      remove.addEventListener("click", function () {
        call("DELETE", "/api/v1/me/push-subscriptions/" + encodeURIComponent(device.id))
          .then(load)
          .then(function () { say("That device gets no more notifications."); })
          .catch(function (e) { say("Not removed: " + e.message); });
      });
      item.append(name, meta, remove);
      list.append(item);
    });
    if (!data.devices.length) {
      var none = document.createElement("li");
      none.className = "muted";
      none.textContent = "No device gets push notifications yet.";
      list.append(none);
    }
    var quiet = data.quiet_hours;
    var zone = document.getElementById("quiet-zone");
    document.getElementById("quiet-from").value = quiet ? quiet.hours.split("-")[0] : "";
    document.getElementById("quiet-until").value = quiet ? quiet.hours.split("-")[1] : "";
    zone.value = quiet ? quiet.time_zone : Intl.DateTimeFormat().resolvedOptions().timeZone || "";
    document.getElementById("quiet-clear").hidden = !quiet;
    var button = document.getElementById("push-subscribe");
    var supported = "serviceWorker" in navigator && "PushManager" in window && "Notification" in window;
    button.disabled = !data.push_available || !supported;
    document.getElementById("push-unsupported").hidden = supported && data.push_available;
  }

  function load() {
    return call("GET", "/api/v1/me/notifications").then(show);
  }

  function keyBytes(value) {
    var text = value.replace(/-/g, "+").replace(/_/g, "/");
    while (text.length % 4) text += "=";
    return Uint8Array.from(atob(text), function (c) { return c.charCodeAt(0); });
  }

  // What a person would call this device.
  function deviceLabel() {
    var ua = navigator.userAgent;
    var browser = /Edg\//.test(ua) ? "Edge" : /Firefox\//.test(ua) ? "Firefox" : /Chrom/.test(ua) ? "Chrome" : /Safari\//.test(ua) ? "Safari" : "Browser";
    var system = /Android/.test(ua) ? "Android" : /iPhone|iPad/.test(ua) ? "iOS" : /Mac OS X/.test(ua) ? "macOS" : /Windows/.test(ua) ? "Windows" : /Linux/.test(ua) ? "Linux" : "this device";
    return browser + " on " + system;
  }

  async function subscribe() {
    say("Asking this browser…");
    var permission = await Notification.requestPermission();
    if (permission !== "granted") {
      throw new Error("notifications are blocked for this site: allow them in the browser's site settings, then try again");
    }
    var registration = await navigator.serviceWorker.register("/sw.js");
    await navigator.serviceWorker.ready;
    var subscription = await registration.pushManager.getSubscription();
    if (!subscription) {
      subscription = await registration.pushManager.subscribe({
        userVisibleOnly: true,
        applicationServerKey: keyBytes(settings.vapid_public_key),
      });
    }
    var json = subscription.toJSON();
    var label = document.getElementById("device-label").value.trim() || deviceLabel();
    await call("POST", "/api/v1/me/push-subscriptions", { endpoint: json.endpoint, keys: json.keys, label: label });
    await load();
    say("This device will be notified when a payment you can approve arrives, and before one expires.");
  }

  document.getElementById("device-label").placeholder = deviceLabel();
  document.getElementById("push-subscribe").addEventListener("click", function () {
    subscribe().catch(function (e) { say("Not subscribed: " + e.message); });
  });
  document.getElementById("email-form").addEventListener("submit", function (event) {
    event.preventDefault();
    var value = document.getElementById("email-input").value.trim();
    call("PUT", "/api/v1/me/email", { email: value || null })
      .then(show)
      .then(function () { say(value ? "Email notifications go to " + value + "." : "Email notifications are off."); })
      .catch(function (e) { say("Not saved: " + e.message); });
  });
  document.getElementById("quiet-form").addEventListener("submit", function (event) {
    event.preventDefault();
    var hours = document.getElementById("quiet-from").value + "-" + document.getElementById("quiet-until").value;
    var zone = document.getElementById("quiet-zone").value.trim();
    call("PUT", "/api/v1/me/quiet-hours", { time_zone: zone, hours: hours })
      .then(show)
      .then(function () { say("Quiet from " + hours.replace("-", " until ") + " (" + zone + "), but for escalations."); })
      .catch(function (e) { say("Not saved: " + e.message); });
  });
  document.getElementById("quiet-clear").addEventListener("click", function () {
    call("PUT", "/api/v1/me/quiet-hours", { time_zone: null, hours: null })
      .then(show)
      .then(function () { say("No quiet hours: you are notified at any time."); })
      .catch(function (e) { say("Not saved: " + e.message); });
  });
  load().catch(function (e) { say("Your notification settings cannot be read: " + e.message); });

  // Delegation while away (docs/DELEGATION.md).
  var delegationStatus = document.getElementById("delegation-status");
  function sayDelegation(text) {
    delegationStatus.textContent = text;
  }

  function showDelegations(data) {
    var me = document.getElementById("delegation").dataset.username;
    var list = document.getElementById("delegation-list");
    list.textContent = "";
    data.delegations.forEach(function (d) {
      var item = document.createElement("li");
      item.className = "delegation";
      item.dataset.delegationId = d.id;
      item.dataset.status = d.status;
      var who = d.delegator === me ? d.delegate + " approves for you" : d.delegate === me ? "You approve for " + d.delegator : d.delegate + " approves for " + d.delegator;
      var text = document.createElement("span");
      text.textContent = who + " from " + when(d.starts_at) + " until " + when(d.ends_at) + " ";
      var state = document.createElement("span");
      state.className = "muted small";
      state.textContent = d.status === "pending" ? "(waits for an admin: counts for " + d.extra_groups.join(", ") + ") " : d.in_force ? "(in force) " : "(not started) ";
      var end = document.createElement("button");
      end.type = "button";
      end.className = "link";
      end.textContent = d.status === "pending" ? "Withdraw" : "End now";
      end.addEventListener("click", function () {
        call("DELETE", "/api/v1/me/delegations/" + encodeURIComponent(d.id))
          .then(loadDelegations)
          .then(function () { sayDelegation("Ended: nobody approves for " + d.delegator + " under it any more."); })
          .catch(function (e) { sayDelegation("Not ended: " + e.message); });
      });
      item.append(text, state, end);
      list.append(item);
    });
    if (!data.delegations.length) {
      var none = document.createElement("li");
      none.className = "muted";
      none.textContent = "Nobody approves for you, and you approve for nobody.";
      list.append(none);
    }
  }

  function loadDelegations() {
    return call("GET", "/api/v1/me/delegations").then(showDelegations);
  }

  // The start of day `value` ("2026-12-24") plus `days`, in this browser's zone.
  function dayStart(value, days) {
    var parts = value.split("-").map(Number);
    return new Date(parts[0], parts[1] - 1, parts[2] + days).toISOString();
  }

  var delegationForm = document.getElementById("delegation-form");
  if (delegationForm) {
    delegationForm.addEventListener("submit", function (event) {
      event.preventDefault();
      var to = document.getElementById("delegation-to").value.trim();
      var body = {
        delegate: to,
        starts_at: dayStart(document.getElementById("delegation-from").value, 0),
        ends_at: dayStart(document.getElementById("delegation-until").value, 1),
      };
      call("POST", "/api/v1/me/delegations", body)
        .then(function (made) {
          sayDelegation(made.delegation.status === "pending"
            ? "Asked: an admin other than you and " + to + " must confirm it (" + made.lines.join("; ") + ")."
            : to + " can approve for you from " + when(made.delegation.starts_at) + ".");
        })
        .then(loadDelegations)
        .catch(function (e) { sayDelegation("Not delegated: " + e.message); });
    });
    loadDelegations().catch(function (e) { sayDelegation("Your delegations cannot be read: " + e.message); });
  }
})();
