export { defaultBurst, TokenBucket } from "../fake-kit/rate-limit.js";
