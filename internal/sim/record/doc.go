// Package record turns a stored thread into a simulator scenario (`agent
// sim record`): the people's messages become sends by their own user ids,
// the persona's model answers the scripted model's (`model:`), the cards
// it asked and the clicks on them card and click steps, and its replies
// the expectations. Every text passes the service's redactor first: a
// secret the redactor knows never reaches the file.
package record
