// Countersign: the browser side of passkeys (WebAuthn), hand-written plain
// JavaScript served as /passkeys.js (not Rust/wasm: the wasm has a size
// budget, and this is a few calls to the browser).
//
// Progressive enhancement: pages carry data attributes, this script does
// the ceremony.
// - A form with `data-step-up` (the approve confirmation) or
//   `data-step-up-bulk` (the bulk page) asks that URL for a step-up
//   challenge, has the passkey sign it (`navigator.credentials.get`, a
//   phone over QR allowed), fills the form's `step_up_*` hidden fields and
//   submits. When no step-up is asked, or there is no WebAuthn, the form is
//   submitted as it is and the server says what is needed. When the
//   passkey cannot sign here (the prompt closed, no passkey on this
//   device), nothing is sent: the page says what to do instead.
// - The account page: `#passkey-list` is filled from `GET /api/v1/me/passkeys`
//   (names and dates; text only), `form[data-passkey-register]` registers
//   one (`navigator.credentials.create`), allowed by an assertion from a
//   passkey the person holds (`navigator.credentials.get` over the
//   options' `authorization` challenge) or by the form's enrolment code;
//   `[data-passkey-remove]` removes one, allowed by an assertion over that
//   removal. `#notice-list` shows the notices about the account.
// - The sign-in page: `#passkey-sign-in` signs in with a passkey the
//   browser offers (no username: discoverable credentials), then goes on
//   to the page asked for.
// Binary values travel base64url, as the server expects.
(function () {
  "use strict";

  function encode(buffer) {
    var bytes = new Uint8Array(buffer);
    var text = "";
    for (var i = 0; i < bytes.length; i++) text += String.fromCharCode(bytes[i]);
    return btoa(text).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  }

  function decode(value) {
    var text = value.replace(/-/g, "+").replace(/_/g, "/");
    while (text.length % 4) text += "=";
    var binary = atob(text);
    var bytes = new Uint8Array(binary.length);
    for (var i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
    return bytes;
  }

  function csrfOf(form) {
    var field = form && form.querySelector('input[name="csrf_token"]');
    return field ? field.value : "";
  }

  // A console API call with the session cookie and the CSRF token.
  function call(method, url, csrf, body) {
    var headers = { "X-CSRF-Token": csrf };
    if (body !== undefined) headers["Content-Type"] = "application/json";
    return fetch(url, {
      method: method,
      credentials: "same-origin",
      headers: headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    }).then(function (response) {
      return response.text().then(function (text) {
        var json = null;
        try {
          json = text ? JSON.parse(text) : null;
        } catch (_) {
          json = null;
        }
        return { status: response.status, body: json };
      });
    });
  }

  function setField(form, name, value) {
    var input = form.querySelector('input[name="' + name + '"]');
    if (!input) {
      input = document.createElement("input");
      input.type = "hidden";
      input.name = name;
      form.appendChild(input);
    }
    input.value = value;
  }

  // An assertion by one of the person's passkeys over `options` (a step-up,
  // or the authorization of a change to their passkeys), as the server
  // reads it.
  function assert(options) {
    return navigator.credentials
      .get({
        publicKey: {
          challenge: decode(options.challenge),
          rpId: options.rp_id,
          // "hybrid" lets the browser offer a phone (a QR code) when this
          // device holds none of the person's passkeys.
          allowCredentials: options.allow_credentials.map(function (id) {
            return { type: "public-key", id: decode(id), transports: ["internal", "hybrid", "usb", "nfc", "ble"] };
          }),
          userVerification: options.user_verification,
          timeout: options.timeout_ms,
        },
      })
      .then(function (credential) {
        return {
          challenge_id: options.challenge_id,
          credential_id: encode(credential.rawId),
          authenticator_data: encode(credential.response.authenticatorData),
          client_data_json: encode(credential.response.clientDataJSON),
          signature: encode(credential.response.signature),
        };
      });
  }

  function failure(answer) {
    return new Error(answer.body && answer.body.error ? answer.body.error.message : "refused");
  }

  // --- Step-up on the approve and bulk forms ---------------------------

  function stepUp(form) {
    var csrf = csrfOf(form);
    var asked = form.dataset.stepUpBulk
      ? call("POST", form.dataset.stepUpBulk, csrf, {
          ids: Array.prototype.map.call(form.querySelectorAll('input[name="id"]'), function (i) {
            return i.value;
          }),
        })
      : call("POST", form.dataset.stepUp, csrf);
    return asked.then(function (answer) {
      if (answer.status !== 201 || !answer.body || !answer.body.required) return null;
      return assert(answer.body).then(function (signed) {
        setField(form, "step_up_challenge_id", signed.challenge_id);
        setField(form, "step_up_credential_id", signed.credential_id);
        setField(form, "step_up_authenticator_data", signed.authenticator_data);
        setField(form, "step_up_client_data_json", signed.client_data_json);
        setField(form, "step_up_signature", signed.signature);
      });
    });
  }

  document.addEventListener(
    "submit",
    function (event) {
      var form = event.target;
      if (!(form instanceof HTMLFormElement)) return;
      if (!form.dataset.stepUp && !form.dataset.stepUpBulk) return;
      if (!window.PublicKeyCredential || !navigator.credentials) return;
      event.preventDefault();
      event.stopImmediatePropagation();
      var button = form.querySelector('button[type="submit"]');
      if (button) button.disabled = true;
      var help = document.getElementById("step-up-help");
      if (help) help.remove();
      stepUp(form).then(
        function () {
          HTMLFormElement.prototype.submit.call(form);
        },
        function (error) {
          // The passkey could not sign here (cancelled, or this device holds
          // none of the person's passkeys): say what to do instead of
          // sending a form the server would refuse again.
          if (button) button.disabled = false;
          stepUpHelp(form, error);
        }
      );
    },
    true
  );

  function stepUpHelp(form, error) {
    var help = document.createElement("div");
    help.id = "step-up-help";
    help.className = "notice notice-error";
    help.setAttribute("role", "alert");
    var lead = document.createElement("p");
    lead.textContent =
      error && error.name === "NotAllowedError"
        ? "Your passkey did not sign this payment: the prompt was closed, or this device holds none of your passkeys. Nothing was sent."
        : "Your passkey could not sign this payment here. Nothing was sent.";
    help.appendChild(lead);
    var ways = document.createElement("ul");
    [
      "Press Approve again and, in the browser's prompt, choose to use a phone or tablet: scan the QR code with the phone that holds your passkey.",
      "Or open this page on the device that holds your passkey and approve there.",
    ].forEach(function (text) {
      var item = document.createElement("li");
      item.textContent = text;
      ways.appendChild(item);
    });
    var register = document.createElement("li");
    register.appendChild(document.createTextNode("Or register a passkey on this device on your "));
    var link = document.createElement("a");
    link.href = "/account";
    link.textContent = "Passkeys page";
    register.appendChild(link);
    register.appendChild(document.createTextNode(" (an admin gives you an enrolment code)."));
    ways.appendChild(register);
    help.appendChild(ways);
    form.insertBefore(help, form.firstChild);
  }

  // --- Signing in with a passkey (the sign-in page) ----------------------

  function signInWithPasskey(button) {
    var line = document.getElementById("passkey-sign-in-status");
    var say = function (text) {
      if (line) line.textContent = text;
    };
    button.disabled = true;
    say("Waiting for your passkey…");
    call("POST", "/api/v1/session/passkey-challenges", "")
      .then(function (answer) {
        if (answer.status !== 201) throw failure(answer);
        var options = answer.body;
        return navigator.credentials
          .get({
            publicKey: {
              challenge: decode(options.challenge),
              rpId: options.rp_id,
              allowCredentials: [],
              userVerification: options.user_verification,
              timeout: options.timeout_ms,
            },
          })
          .then(function (credential) {
            var handle = credential.response.userHandle;
            return call("POST", "/api/v1/session/passkey", "", {
              challenge_id: options.challenge_id,
              credential_id: encode(credential.rawId),
              authenticator_data: encode(credential.response.authenticatorData),
              client_data_json: encode(credential.response.clientDataJSON),
              signature: encode(credential.response.signature),
              user_handle: handle ? encode(handle) : "",
            });
          });
      })
      .then(function (answer) {
        if (answer.status !== 200) throw failure(answer);
        var next = button.dataset.next || "/";
        // Only a path on this site (the page already checked it).
        location.assign(next.charAt(0) === "/" && next.charAt(1) !== "/" ? next : "/");
      })
      .catch(function () {
        button.disabled = false;
        say("Your passkey did not sign you in. Try again, or use your username and password.");
      });
  }

  var passkeySignIn = document.getElementById("passkey-sign-in");
  if (passkeySignIn && window.PublicKeyCredential && navigator.credentials) {
    document.getElementById("passkey-sign-in-box").hidden = false;
    passkeySignIn.addEventListener("click", function () {
      signInWithPasskey(passkeySignIn);
    });
  }

  // --- The account page --------------------------------------------------

  function status(text) {
    var line = document.getElementById("passkey-status");
    if (line) line.textContent = text;
  }

  function registerForm() {
    return document.querySelector("form[data-passkey-register]");
  }

  function renderList() {
    var list = document.getElementById("passkey-list");
    if (!list) return Promise.resolve();
    // `data-ready` is "1" once the list shows what the server has.
    list.dataset.ready = "pending";
    return fetch(list.dataset.passkeyList, { credentials: "same-origin" })
      .then(function (r) {
        return r.json();
      })
      .then(function (body) {
        var items = (body && body.data) || [];
        var nodes = items.map(function (p) {
          var item = document.createElement("li");
          item.className = "passkey";
          item.dataset.passkey = p.id;
          var name = document.createElement("strong");
          name.textContent = p.name;
          var when = document.createElement("span");
          when.className = "muted";
          when.textContent =
            " added " + p.created_at.slice(0, 10) + (p.last_used_at ? ", last used " + p.last_used_at.slice(0, 16).replace("T", " ") : ", not used yet") +
            (p.usable_from ? "; can approve from " + p.usable_from.slice(0, 16).replace("T", " ") + " UTC (or once an admin confirms it)" : "") + " ";
          when.dataset.coolingOff = p.usable_from ? "1" : "0";
          var remove = document.createElement("button");
          remove.type = "button";
          remove.className = "link";
          remove.dataset.passkeyRemove = p.id;
          remove.textContent = "Remove";
          item.append(name, when, remove);
          return item;
        });
        if (!nodes.length) {
          var none = document.createElement("li");
          none.className = "muted";
          none.id = "no-passkeys";
          none.textContent = "No passkey registered yet.";
          nodes = [none];
        }
        list.replaceChildren.apply(list, nodes);
        list.dataset.ready = "1";
      });
  }

  function register(form) {
    var csrf = csrfOf(form);
    var name = form.querySelector('input[name="name"]').value;
    var codeField = form.querySelector('input[name="enrolment_code"]');
    var code = codeField ? codeField.value.trim() : "";
    status("Follow your browser's prompt…");
    return call("POST", "/api/v1/me/passkeys/challenges", csrf)
      .then(function (answer) {
        if (answer.status !== 201) throw failure(answer);
        var o = answer.body;
        // Holding passkeys: one of them allows the new one first.
        var allowed = o.authorization ? assert(o.authorization) : Promise.resolve(null);
        return allowed.then(function (authorization) {
          return create(o, authorization);
        });
      })
      .then(function (answer) {
        if (answer.status !== 201) throw failure(answer);
        var name = answer.body.name;
        if (codeField) codeField.value = "";
        return Promise.all([renderList(), renderNotices()]).then(function () {
          status("Passkey “" + name + "” registered." + (answer.body.usable_from ? " It can approve payments from " + answer.body.usable_from.slice(0, 16).replace("T", " ") + " UTC, or once an admin confirms it." : ""));
        });
      })
      .catch(function (e) {
        status("Not registered: " + (e && e.message ? e.message : "cancelled") );
      });

    function create(o, authorization) {
        return navigator.credentials
          .create({
            publicKey: {
              challenge: decode(o.challenge),
              rp: { id: o.rp_id, name: o.rp_name },
              user: { id: decode(o.user_handle), name: o.user_name, displayName: o.user_name },
              pubKeyCredParams: o.algorithms.map(function (alg) {
                return { type: "public-key", alg: alg };
              }),
              excludeCredentials: o.exclude_credentials.map(function (id) {
                return { type: "public-key", id: decode(id) };
              }),
              authenticatorSelection: { userVerification: o.user_verification, residentKey: "preferred" },
              attestation: "none",
              timeout: o.timeout_ms,
            },
          })
          .then(function (credential) {
            var body = {
              challenge_id: o.challenge_id,
              name: name,
              client_data_json: encode(credential.response.clientDataJSON),
              attestation_object: encode(credential.response.attestationObject),
            };
            if (authorization) body.authorization = authorization;
            if (code) body.enrolment_code = code;
            return call("POST", form.dataset.passkeyRegister, csrf, body);
          });
    }
  }

  function remove(id, csrf) {
    var base = "/api/v1/me/passkeys/" + encodeURIComponent(id);
    status("Follow your browser's prompt…");
    return call("POST", base + "/removal-challenges", csrf)
      .then(function (answer) {
        if (answer.status !== 201) throw failure(answer);
        return assert(answer.body);
      })
      .then(function (authorization) {
        return call("DELETE", base, csrf, { authorization: authorization });
      })
      .then(function (answer) {
        if (answer.status !== 204) throw failure(answer);
        return Promise.all([renderList(), renderNotices()]).then(function () {
          status("Passkey removed.");
        });
      })
      .catch(function (e) {
        return renderList().then(function () {
          status("Not removed: " + (e && e.message ? e.message : "cancelled"));
        });
      });
  }

  function renderNotices() {
    var list = document.getElementById("notice-list");
    if (!list) return Promise.resolve();
    list.dataset.ready = "pending";
    return fetch(list.dataset.noticeList, { credentials: "same-origin" })
      .then(function (r) {
        return r.json();
      })
      .then(function (body) {
        var items = (body && body.data) || [];
        var nodes = items.map(function (n) {
          var item = document.createElement("li");
          item.className = "notice-item" + (n.read ? "" : " unread");
          item.dataset.kind = n.kind;
          var when = document.createElement("span");
          when.className = "muted small";
          when.textContent = n.created_at.slice(0, 16).replace("T", " ") + " UTC: ";
          var text = document.createElement("span");
          text.textContent = n.message;
          item.append(when, text);
          return item;
        });
        if (!nodes.length) {
          var none = document.createElement("li");
          none.className = "muted";
          none.textContent = "Nothing yet.";
          nodes = [none];
        }
        list.replaceChildren.apply(list, nodes);
        list.dataset.ready = "1";
      });
  }

  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (!(form instanceof HTMLFormElement) || !form.dataset.passkeyRegister) return;
    event.preventDefault();
    if (!window.PublicKeyCredential) {
      status("This browser cannot use passkeys.");
      return;
    }
    register(form);
  });

  document.addEventListener("click", function (event) {
    var button = event.target.closest && event.target.closest("[data-passkey-remove]");
    if (button) {
      remove(button.dataset.passkeyRemove, csrfOf(registerForm()));
      return;
    }
    var read = event.target.closest && event.target.closest("[data-notices-read]");
    if (read) {
      call("POST", read.dataset.noticesRead, csrfOf(registerForm())).then(function () {
        var badge = document.getElementById("notice-count");
        if (badge) badge.remove();
        return renderNotices();
      });
    }
  });

  // Fills the list once per page: loaded, or reached by the console's own
  // navigation (the router swaps the page without a load event).
  function start() {
    var list = document.getElementById("passkey-list");
    if (list && !list.dataset.ready) renderList();
    var notices = document.getElementById("notice-list");
    if (notices && !notices.dataset.ready) renderNotices();
  }

  function watch() {
    start();
    new MutationObserver(start).observe(document.body, { childList: true, subtree: true });
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", watch);
  else watch();
})();
