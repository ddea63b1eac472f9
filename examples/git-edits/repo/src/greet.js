// Greetings for the demo service.
export function greet(name) {
  return `Hello, ${name}!`;
}
