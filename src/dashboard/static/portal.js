// hookrelay tenant portal, the link's landing page (docs/portal.md): takes the token from
// the URL fragment (never sent to a server), removes it from the address bar and history,
// and trades it for a session cookie at /portal/session.
(() => {
  const status = document.getElementById("portal-status");
  if (!status) return;
  const match = /(?:^#|&)token=([A-Za-z0-9_-]+)/.exec(location.hash);
  if (location.hash) history.replaceState(null, "", location.pathname + location.search);
  if (!match) {
    location.replace("/portal/endpoints");
    return;
  }
  fetch("/portal/session", {
    method: "POST",
    credentials: "same-origin",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ token: match[1] }),
  }).then(
    (res) => {
      if (res.ok) location.replace("/portal/endpoints");
      else
        status.textContent =
          "This link has expired or was revoked. Open the webhooks page again from the application that sent you here.";
    },
    () => {
      status.textContent = "The portal could not be reached. Try again in a moment.";
    },
  );
})();
