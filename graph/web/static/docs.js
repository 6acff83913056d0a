// The API's documentation page (/docs): Swagger UI on the studio's OpenAPI document. A file
// of its own, since the studio's Content-Security-Policy runs no inline script.
"use strict";
document.addEventListener("DOMContentLoaded", () => {
  const root = document.getElementById("swagger-ui");
  if (!root || typeof window.SwaggerUIBundle !== "function") return;
  window.SwaggerUIBundle({
    url: root.dataset.url,
    dom_id: "#swagger-ui",
    deepLinking: true,
    presets: [window.SwaggerUIBundle.presets.apis],
  });
});
