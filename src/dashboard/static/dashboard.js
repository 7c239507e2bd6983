// hookrelay dashboard: small progressive enhancements (docs/dashboard.md). Every page works
// without this file; with it, forms that change something ask first (data-confirm), and
// htmx requests carry the session's CSRF token as a header.
(() => {
  const csrf = document.querySelector('meta[name="csrf-token"]')?.getAttribute("content");

  document.addEventListener("htmx:configRequest", (event) => {
    if (csrf) event.detail.headers["x-csrf-token"] = csrf;
  });

  document.addEventListener("submit", (event) => {
    const form = event.target;
    if (!(form instanceof HTMLFormElement)) return;
    const question = form.getAttribute("data-confirm");
    if (question && !window.confirm(question)) event.preventDefault();
  });

  // A select or checkbox in a filter form applies at once (the button stays for keyboards).
  document.addEventListener("change", (event) => {
    const input = event.target;
    if (!(input instanceof HTMLElement)) return;
    const form = input.closest("form[data-autosubmit]");
    if (form instanceof HTMLFormElement && input.matches("select, input[type=checkbox]")) {
      form.requestSubmit();
    }
  });
})();
