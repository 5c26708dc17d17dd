// Countersign: the console session, as the reviewer lives it. Plain
// JavaScript served as /session.js (like /passkeys.js: no wasm needed).
//
// 1. Drafts are never lost. What a reviewer types into a form (a rejection
//    reason, a "not a duplicate" statement, an admin field) is kept in this
//    tab's sessionStorage as they type. When a post comes back to the same
//    page (the session had ended: sign-in, then back here; or the page's
//    form had gone stale) the draft is put back and the page says so. A
//    draft is dropped once its form went through (the browser moved on to
//    another page, or back with a success notice). Passwords, hidden fields
//    and one-time codes are never kept.
// 2. The idle timeout is said before it happens. The server ends a session
//    after `idle_timeout_secs` without the person doing anything (its live
//    pages' background reads do not count). This script tells the server
//    when the person does something (a key, a click; at most every
//    `refresh`), and a minute before the timeout shows a warning with "Stay
//    signed in"; at the timeout it says the session ended and offers
//    sign-in, back to this page, the draft kept.
(function () {
  "use strict";

  var PREFIX = "countersign-draft:";

  function storage() {
    try {
      return window.sessionStorage;
    } catch (e) {
      return null;
    }
  }

  function keep(field) {
    if (!field.name || field.name === "csrf_token" || field.name === "return_to") return false;
    if (field.tagName === "TEXTAREA") return true;
    if (field.tagName !== "INPUT") return false;
    var type = (field.getAttribute("type") || "text").toLowerCase();
    var code = (field.getAttribute("autocomplete") || "") === "one-time-code";
    return !code && ["text", "number", "email", "search", "tel", "url"].indexOf(type) >= 0;
  }

  // Forms with the same action on one page (the bulk page's approve and
  // reject) are told apart by their order.
  function sameAction(action) {
    return Array.prototype.filter.call(document.forms, function (f) {
      return (f.getAttribute("action") || "") === action;
    });
  }

  function formKey(form) {
    var action = form.getAttribute("action") || "";
    return PREFIX + location.pathname + "|" + action + "|" + sameAction(action).indexOf(form);
  }

  function read(key) {
    var s = storage();
    if (!s) return null;
    try {
      return JSON.parse(s.getItem(key) || "null");
    } catch (e) {
      return null;
    }
  }

  function write(key, draft) {
    var s = storage();
    if (s) {
      try {
        s.setItem(key, JSON.stringify(draft));
      } catch (e) {
        // Storage full or refused: the draft is simply not kept.
      }
    }
  }

  function save(form, submitted) {
    var fields = {};
    var any = false;
    Array.prototype.forEach.call(form.elements, function (field) {
      if (keep(field) && field.value !== field.defaultValue) {
        fields[field.name] = field.value;
        any = true;
      }
    });
    var key = formKey(form);
    var s = storage();
    if (!any) {
      if (s) s.removeItem(key);
      return;
    }
    write(key, { path: location.pathname, fields: fields, submitted: submitted });
  }

  function succeeded() {
    var params = new URLSearchParams(location.search);
    return params.has("done") || params.has("result") || params.has("outcome");
  }

  function say(text, id) {
    var old = document.getElementById(id);
    if (old) old.remove();
    var p = document.createElement("p");
    p.id = id;
    p.className = "notice notice-ok session-notice";
    p.setAttribute("role", "status");
    p.textContent = text;
    // The app's empty #session-notices (never re-rendered by it).
    var box = document.getElementById("session-notices");
    if (!box) return p;
    box.appendChild(p);
    return p;
  }

  // Puts back the drafts of this page's forms; drops those of forms that
  // went through.
  function restore() {
    var s = storage();
    if (!s || location.pathname === "/login") return;
    var restored = false;
    var keys = [];
    for (var i = 0; i < s.length; i++) {
      if (s.key(i).indexOf(PREFIX) === 0) keys.push(s.key(i));
    }
    keys.forEach(function (key) {
      var draft = read(key);
      if (!draft) return;
      if (draft.path !== location.pathname) {
        // Its post went through and the browser moved on.
        if (draft.submitted) s.removeItem(key);
        return;
      }
      if (draft.submitted && succeeded()) {
        s.removeItem(key);
        return;
      }
      var rest = key.slice((PREFIX + location.pathname + "|").length);
      var cut = rest.lastIndexOf("|");
      var form = sameAction(rest.slice(0, cut))[parseInt(rest.slice(cut + 1), 10)];
      if (!form) return;
      Object.keys(draft.fields).forEach(function (name) {
        var field = form.elements.namedItem(name);
        // Typed into a fresh page: put back only where nothing was typed yet.
        if (field && keep(field) && (draft.submitted || field.value === field.defaultValue)) {
          field.value = draft.fields[name];
          restored = restored || draft.submitted;
        }
      });
    });
    if (restored) {
      say("Nothing was sent: your session had ended or the page was out of date. What you typed is back; check it and send again.", "draft-restored");
    }
  }

  function watchForms() {
    document.addEventListener("input", function (event) {
      var form = event.target && event.target.form;
      if (form && (form.method || "").toLowerCase() === "post" && keep(event.target)) save(form, false);
    });
    document.addEventListener(
      "submit",
      function (event) {
        var form = event.target;
        if (form && (form.method || "").toLowerCase() === "post") save(form, true);
      },
      true
    );
  }

  // The idle timeout, from <meta name="countersign-idle-secs">: only on
  // pages of a signed-in person.
  function watchIdle() {
    var meta = document.querySelector('meta[name="countersign-idle-secs"]');
    var idle = meta ? parseInt(meta.getAttribute("content"), 10) : 0;
    if (!(idle > 0)) return;
    var refresh = Math.min(60, Math.max(1, Math.floor(idle / 20)));
    var warnAt = Math.max(idle - 60, Math.floor(idle / 2));
    var lastActive = Date.now();
    var lastTold = Date.now();
    var ended = false;
    var warning = null;

    function back() {
      return "/login?next=" + encodeURIComponent(location.pathname + location.search) + "&expired=1";
    }

    function end() {
      ended = true;
      if (warning) warning.remove();
      var p = say("", "session-ended");
      p.className = "notice notice-error session-notice";
      p.setAttribute("role", "alert");
      p.appendChild(document.createTextNode("Your session has ended. "));
      var a = document.createElement("a");
      a.href = back();
      a.id = "sign-in-again";
      a.textContent = "Sign in again";
      p.appendChild(a);
      p.appendChild(document.createTextNode(": you come back here, and what you typed is kept."));
    }

    function tell() {
      lastTold = Date.now();
      fetch("/session/alive", { credentials: "same-origin", cache: "no-store" }).then(
        function (r) {
          if (r.status === 401) end();
        },
        function () {}
      );
    }

    function active() {
      if (ended) return;
      lastActive = Date.now();
      if (warning) {
        warning.remove();
        warning = null;
      }
      if (Date.now() - lastTold >= refresh * 1000) tell();
    }

    function warn() {
      warning = say("", "idle-warning");
      warning.className = "notice session-notice";
      warning.setAttribute("role", "alert");
      warning.appendChild(
        document.createTextNode("You have been away a while: your session ends in about a minute. ")
      );
      var stay = document.createElement("button");
      stay.type = "button";
      stay.id = "stay-signed-in";
      stay.textContent = "Stay signed in";
      stay.addEventListener("click", function () {
        lastTold = 0;
        active();
      });
      warning.appendChild(stay);
    }

    ["keydown", "pointerdown"].forEach(function (name) {
      document.addEventListener(name, function (event) {
        if (event.target && event.target.id === "stay-signed-in") return;
        active();
      }, true);
    });
    setInterval(function () {
      if (ended) return;
      // What the server counts: the last time it was told.
      var quiet = (Date.now() - lastTold) / 1000;
      if (quiet >= idle) end();
      else if (quiet >= warnAt && !warning && Date.now() - lastActive >= warnAt * 1000) warn();
    }, 1000);
  }

  function start() {
    restore();
    watchForms();
    watchIdle();
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
