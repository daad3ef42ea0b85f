export type { RandomSource } from "../fake-kit/random.js";
export { seededRandom } from "../fake-kit/random.js";
