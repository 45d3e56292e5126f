import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    environment: "node", // DOM tests opt in with a `@vitest-environment happy-dom` docblock
    include: ["test/**/*.test.js"],
  },
});
