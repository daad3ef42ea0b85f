// Stands in for the `whatwg-url` package in the agent bundle (scripts/build.sh). node-fetch 2
// imports it only as a fallback for `require("url").URL`, which Node always has; the real package
// would load tr46's Unicode mapping table (~4 MiB of the agent's memory) for nothing.
export const URL = globalThis.URL;
export const URLSearchParams = globalThis.URLSearchParams;
export default { URL, URLSearchParams };
