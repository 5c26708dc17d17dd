// Countersign's service worker (/sw.js, scope /): shows the Web Push
// notifications the server sends (payee, amount, risk signals, time left)
// and, on a click, opens the proposal in the console, where the decision
// is taken as on any page (sign-in and step-up included). It caches
// nothing: a payment console never shows a stale page.
"use strict";

self.addEventListener("install", function () {
  self.skipWaiting();
});

self.addEventListener("activate", function (event) {
  event.waitUntil(self.clients.claim());
});

// A URL of this console, or null: a notification never opens another site.
function ours(url) {
  try {
    var parsed = new URL(url, self.location.origin);
    return parsed.origin === self.location.origin ? parsed.href : null;
  } catch (e) {
    return null;
  }
}

self.addEventListener("push", function (event) {
  var data = {};
  try {
    data = event.data ? event.data.json() : {};
  } catch (e) {
    data = {};
  }
  var title = typeof data.title === "string" ? data.title : "Countersign";
  event.waitUntil(
    self.registration.showNotification(title, {
      body: typeof data.body === "string" ? data.body : "A payment is waiting for a decision.",
      tag: typeof data.tag === "string" ? data.tag : undefined,
      renotify: typeof data.tag === "string",
      requireInteraction: true,
      icon: "/favicon.svg",
      badge: "/favicon.svg",
      data: { url: ours(data.url) || "/" },
    })
  );
});

self.addEventListener("notificationclick", function (event) {
  event.notification.close();
  var url = ours(event.notification.data && event.notification.data.url) || "/";
  event.waitUntil(
    self.clients.matchAll({ type: "window" }).then(function (windows) {
      // A console tab already open goes to the proposal; else a new one.
      for (var i = 0; i < windows.length; i++) {
        var client = windows[i];
        if (typeof client.navigate === "function") {
          return client.navigate(url).then(function (moved) {
            var target = moved || client;
            return target.focus ? target.focus().catch(function () {}) : undefined;
          }, function () {
            return self.clients.openWindow(url);
          });
        }
      }
      return self.clients.openWindow(url);
    })
  );
});
